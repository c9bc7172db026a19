//! What this machine can give a run, and byte counts for people (`outrun check`; each job
//! estimates its own ranks' memory: `Job::memory`).

/// Bytes this machine can give a run: `OUTRUN_MEMORY_LIMIT` (bytes, or with a K/M/G suffix)
/// if set, else MemAvailable from /proc/meminfo (None when unknown).
pub fn available() -> Option<u64> {
    if let Ok(v) = std::env::var("OUTRUN_MEMORY_LIMIT") {
        return parse_bytes(&v);
    }
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// `123`, `4K`, `512M`, `2G` → bytes.
pub fn parse_bytes(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1u64 << 10),
        'M' | 'm' => (&s[..s.len() - 1], 1 << 20),
        'G' | 'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0).map(|v| (v * mult as f64) as u64)
}

/// `1.5 GB`.
pub fn human(bytes: u64) -> String {
    let b = bytes as f64;
    match b {
        _ if b >= 1e15 => format!("{:.1} PB", b / 1e15),
        _ if b >= 1e12 => format!("{:.1} TB", b / 1e12),
        _ if b >= 1e9 => format!("{:.1} GB", b / 1e9),
        _ if b >= 1e6 => format!("{:.1} MB", b / 1e6),
        _ => format!("{:.1} KB", b / 1e3),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes_parse() {
        assert_eq!(parse_bytes("2G"), Some(2 << 30));
        assert_eq!(parse_bytes("512M"), Some(512 << 20));
        assert_eq!(parse_bytes("1000"), Some(1000));
        assert_eq!(parse_bytes("lots"), None);
        assert_eq!(human(1_500_000_000), "1.5 GB");
        assert_eq!(human(14_400_000_000_000_000), "14.4 PB");
    }
}
