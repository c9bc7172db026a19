//! What a run will hold in memory, estimated before it starts (`outrun check`).
//!
//! Each rank holds its rows densely (load × p f64 values, one copy per part), a few model-sized
//! vectors (θ, the gradient, message buffers in flight), and rank 0 the plan and the book.

use outrun_plan::Plan;

/// Model-sized vectors a rank keeps at once (θ, parts' results, received frames, the total).
const VECTORS: u64 = 8;

/// Estimated peak bytes of every rank.
pub fn per_rank(plan: &Plan, features: usize) -> Vec<u64> {
    let p = features as u64;
    let vec_bytes = (p + 1).saturating_mul(8);
    plan.nodes
        .iter()
        .map(|n| {
            let rows = n.load() as u64;
            let parts = (n.parts.len() as u64).max(1) + n.children.len() as u64;
            rows.saturating_mul(p).saturating_mul(8).saturating_add(vec_bytes.saturating_mul(VECTORS + parts))
        })
        .collect()
}

/// PageRank: every server holds the whole graph in both directions (two CSR arrays of u32
/// ids plus offsets), a value per edge (its Map output), the rank vector twice, its rows' slots
/// and the bytes of its rows (bounded by a value per edge).
pub fn per_rank_pagerank(plan: &Plan, vertices: usize, values: usize) -> Vec<u64> {
    let (n, e) = (vertices as u64, values as u64);
    let each = e.saturating_mul(4 * 2 + 8 + 8 + 8).saturating_add(n.saturating_mul(8 * 2 + 8 * 2));
    vec![each; plan.ranks]
}

/// Estimated peak bytes of every rank of a mat-vec with `cols` columns: every rank reads the
/// whole r × m matrix, a worker also holds its ℓ coded rows, and the master the decoder (the
/// dense coded rows and an r × r factorization for the Gaussian code, the parity rows and at
/// most their square for the systematic one, the neighbour lists for LT).
pub fn per_rank_matvec(plan: &Plan, cols: usize) -> Vec<u64> {
    use outrun_codes::RowCodeKind;
    let (r, m) = (plan.samples as u64, cols as u64);
    let whole = r.saturating_mul(m).saturating_mul(8);
    let decoder = plan
        .codes
        .iter()
        .find_map(|c| match c {
            outrun_plan::PlanCode::Rows { code, .. } => Some((code.kind, code.n as u64)),
            _ => None,
        })
        .map_or(0, |(kind, n)| match kind {
            RowCodeKind::Identity => 0,
            RowCodeKind::Gaussian => n.saturating_mul(r).saturating_add(r.saturating_mul(r)),
            RowCodeKind::Systematic => {
                let parity = n.saturating_sub(r);
                parity.saturating_mul(r).saturating_add(parity.min(r).saturating_mul(r))
            }
            RowCodeKind::Lt { .. } => n.saturating_mul(20),
        });
    plan.nodes
        .iter()
        .map(|n| {
            let own = (n.load() as u64).saturating_mul(m).saturating_mul(8);
            let decode = if n.children.is_empty() { 0 } else { decoder.saturating_mul(8) };
            whole
                .saturating_add(own)
                .saturating_add(decode)
                .saturating_add((r + m).saturating_mul(8).saturating_mul(VECTORS))
        })
        .collect()
}

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
    }
}
