//! `outrun bench link`: a bulk TCP transfer between two hosts, timed at the receiver, to check
//! a link's rate (e.g. the shaped links of `launch/emu-cluster`).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::time::Instant;

/// Receive until EOF on one connection; reply with the bytes and seconds seen.
pub(crate) fn serve(addr: &str) -> Result<(), String> {
    let listener = TcpListener::bind(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let (mut s, _) = listener.accept().map_err(|e| format!("accept: {e}"))?;
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    let mut first: Option<Instant> = None;
    loop {
        let n = s.read(&mut buf).map_err(|e| format!("read: {e}"))?;
        if n == 0 {
            break;
        }
        first.get_or_insert_with(Instant::now);
        total += n as u64;
    }
    let secs = first.map_or(0.0, |t| t.elapsed().as_secs_f64());
    s.write_all(format!("{total} {secs}\n").as_bytes()).map_err(|e| format!("reply: {e}"))?;
    Ok(())
}

/// Send `mbytes` MB to `addr`; returns (bytes, seconds, MB/s) as measured by the receiver.
pub(crate) fn send(addr: &str, mbytes: usize) -> Result<(u64, f64, f64), String> {
    let mut s = TcpStream::connect(addr).map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    let chunk = vec![0x5au8; 1 << 16];
    let mut left = mbytes * 1_000_000;
    while left > 0 {
        let n = left.min(chunk.len());
        s.write_all(&chunk[..n]).map_err(|e| format!("write: {e}"))?;
        left -= n;
    }
    s.shutdown(Shutdown::Write).map_err(|e| format!("shutdown: {e}"))?;
    let mut reply = String::new();
    s.read_to_string(&mut reply).map_err(|e| format!("read reply: {e}"))?;
    let mut it = reply.split_whitespace();
    let bytes: u64 = it.next().and_then(|v| v.parse().ok()).ok_or("malformed reply")?;
    let secs: f64 = it.next().and_then(|v| v.parse().ok()).ok_or("malformed reply")?;
    Ok((bytes, secs, bytes as f64 / secs / 1e6))
}
