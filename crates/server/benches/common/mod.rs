//! What the backend benches share.

/// CPU time (user + system) of this process, all threads, in µs (10 ms resolution).
pub fn cpu_us() -> u64 {
    stat_cpu_us("/proc/self/stat")
}

/// CPU time (user + system) in µs from a `stat` file of procfs: `/proc/self/stat` for the
/// process, `/proc/thread-self/stat` for the calling thread (10 ms resolution).
pub fn stat_cpu_us(path: &str) -> u64 {
    let stat = std::fs::read_to_string(path).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks * 10_000
}
