//! Link faults at run time: whether worker w's link to its parent fails in iteration t, and how
//! long a message on it waits — pure functions of (seed, worker, iteration, direction, message),
//! so the engine and the simulator, and every scheme under the same seed, see the same links.

use outrun_codes::{domain, Rng};
use serde::{Deserialize, Serialize};

use outrun_config::{Config, LinksConfig};

/// The run's link model (none by default).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "kebab-case")]
pub enum Links {
    /// Links deliver at once.
    #[default]
    None,
    /// Links that fail: a worker's messages to its parent in an iteration are lost.
    Fail {
        /// Workers whose links may fail (empty: all).
        workers: Vec<usize>,
        /// Probability per link and iteration.
        p: f64,
        /// First iteration.
        from: u64,
        /// Seed of the draws.
        seed: u64,
        /// Hierarchical patterns: a failing client loses exactly this many of its helper links.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        per_client: Option<usize>,
    },
    /// Slow links: a message waits τ × Geometric(1 − p) transmissions.
    Delay {
        /// Per worker (index 0 = worker 1): seconds per transmission up.
        up: Vec<f64>,
        /// Per worker: seconds per transmission down.
        down: Vec<f64>,
        /// Probability that a transmission fails.
        p: f64,
        /// Seed of the draws.
        seed: u64,
    },
    /// Every message of the node protocol between two ranks waits `seconds` before it leaves.
    Latency {
        /// Seconds per message.
        seconds: f64,
    },
}

/// Keys of the hierarchical draws (apart from every other draw of the link domain).
const HIER_CLIENT: u64 = 0x6869_6572_0001;
const HIER_CHOICE: u64 = 0x6869_6572_0002;
const HIER_LINK: u64 = 0x6869_6572_1000;

/// A message's key on its link: its iteration, kind and round, and whether it goes up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hop {
    /// The worker at the link's lower end.
    pub worker: usize,
    /// The message's iteration.
    pub t: u64,
    /// Up (child → parent) or down.
    pub up: bool,
    /// A number for the message's kind.
    pub kind: u64,
    /// Its round.
    pub round: u64,
}

impl Links {
    /// The link model of `cfg`.
    pub fn from_config(cfg: &Config) -> Self {
        let n = cfg.workers();
        let seed = cfg.run.seed;
        match &cfg.links {
            LinksConfig::None => Links::None,
            LinksConfig::Fail(f) => {
                let mut workers = f.workers.clone();
                workers.sort_unstable();
                workers.dedup();
                Links::Fail { workers, p: f.p, from: f.from, seed, per_client: f.per_client }
            }
            LinksConfig::Delay(d) => Links::Delay {
                up: d.tau_up.as_ref().map_or_else(|| vec![0.0; n], |v| v.values(n)),
                down: d.tau_down.as_ref().map_or_else(|| vec![0.0; n], |v| v.values(n)),
                p: d.p,
                seed,
            },
            LinksConfig::Latency(l) => Links::Latency { seconds: l.seconds() },
        }
    }

    /// The latency every message pays, on any link (`model = "latency"`).
    pub fn latency(&self) -> Option<f64> {
        match self {
            Links::Latency { seconds } => Some(*seconds),
            _ => None,
        }
    }

    /// Whether worker `w`'s link to its parent fails in iteration `t` (its messages up are lost).
    pub fn fails(&self, worker: usize, t: u64) -> bool {
        let Links::Fail { workers, p, from, seed, .. } = self else { return false };
        t >= *from
            && (workers.is_empty() || workers.binary_search(&worker).is_ok())
            && (*p >= 1.0 || Rng::from_key(&[*seed, domain::LINK, worker as u64, t]).uniform() < *p)
    }

    /// The helpers (0-based, ascending) whose link from client `worker` fails in iteration `t`
    /// (hierarchical patterns: a client has a link to each of `helpers` helpers): `per_client`
    /// of them drawn uniformly in an iteration where the client fails (probability `p`), or
    /// each link on its own with probability `p`.
    pub fn failed_helpers(&self, worker: usize, helpers: usize, t: u64) -> Vec<usize> {
        let Links::Fail { workers, p, from, seed, per_client } = self else { return vec![] };
        if t < *from || !(workers.is_empty() || workers.binary_search(&worker).is_ok()) {
            return vec![];
        }
        let draw = |key: u64| *p >= 1.0 || Rng::from_key(&[*seed, domain::LINK, worker as u64, t, key]).uniform() < *p;
        match per_client {
            Some(q) if draw(HIER_CLIENT) => {
                let mut rng = Rng::from_key(&[*seed, domain::LINK, worker as u64, t, HIER_CHOICE]);
                let mut failed = rng.choose(helpers, (*q).min(helpers));
                failed.sort_unstable();
                failed
            }
            Some(_) => vec![],
            None => (0..helpers).filter(|&h| draw(HIER_LINK + h as u64)).collect(),
        }
    }

    /// Seconds the message `hop` waits on its link: τ × the number of transmissions until one
    /// succeeds (0 without slow links).
    pub fn delay(&self, hop: Hop) -> f64 {
        let Links::Delay { up, down, p, seed } = self else { return 0.0 };
        let i = hop.worker.saturating_sub(1);
        let tau = if hop.up { up[i] } else { down[i] };
        if tau == 0.0 {
            return 0.0;
        }
        let mut rng =
            Rng::from_key(&[*seed, domain::LINK, hop.worker as u64, hop.t, u64::from(hop.up), hop.kind, hop.round]);
        let mut sends = 1.0;
        while rng.uniform() < *p {
            sends += 1.0;
        }
        tau * sends
    }

    /// Whether messages wait on links (the drivers hold them).
    pub fn delays(&self) -> bool {
        matches!(self, Links::Delay { .. } | Links::Latency { .. })
    }

    /// One line for `outrun plan`, or None without link faults.
    pub fn describe(&self) -> Option<String> {
        let per = |v: &[f64]| match v.first() {
            Some(&x) if v.iter().all(|&y| y == x) => format!("{x} s"),
            _ => format!("{v:?} s"),
        };
        match self {
            Links::None => None,
            Links::Fail { workers, p, from, per_client: Some(q), .. } => Some(format!(
                "fail: {}{}, {} loses {q} of its links to the helpers, chosen uniformly (what it sends on them is lost)",
                if *p < 1.0 { format!("in an iteration with probability p = {p}") } else { "every iteration".into() },
                if *from > 0 { format!(" from iteration {from}") } else { String::new() },
                if workers.is_empty() { "each client".to_string() } else { format!("each of clients {workers:?}") },
            )),
            Links::Fail { workers, p, from, .. } => Some(format!(
                "fail: the uplinks of {} fail{}{} (their results are lost)",
                if workers.is_empty() { "every worker".to_string() } else { format!("workers {workers:?}") },
                if *p < 1.0 { format!(" with p = {p} per iteration") } else { " every iteration".into() },
                if *from > 0 { format!(" from iteration {from}") } else { String::new() }
            )),
            Links::Delay { up, down, p, .. } => Some(format!(
                "delay: a transmission takes {} up, {} down, and fails with p = {p} (transmissions ~ Geometric(1 − p), mean {:.3})",
                per(up),
                per(down),
                1.0 / (1.0 - p)
            )),
            Links::Latency { seconds } => Some(format!(
                "latency: every message from one rank to another waits {seconds} s before it leaves (held by its sender, in order per destination; the MPI library's own collectives are not held)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_latency_is_every_message_s_and_only_a_latency() {
        let l = Links::Latency { seconds: 0.004 };
        assert_eq!(l.latency(), Some(0.004));
        assert!(l.delays() && !l.fails(1, 0) && l.failed_helpers(1, 4, 0).is_empty());
        assert!(l.describe().unwrap().starts_with("latency: every message from one rank to another waits 0.004 s"));
        assert_eq!(Links::None.latency(), None);
    }

    #[test]
    fn failures_follow_the_list_the_start_and_p() {
        let l = Links::Fail { workers: vec![2], p: 1.0, from: 3, seed: 1, per_client: None };
        assert!(!l.fails(2, 2) && l.fails(2, 3) && !l.fails(1, 3));
        let l = Links::Fail { workers: vec![], p: 0.3, from: 0, seed: 1, per_client: None };
        let rate = (0..2000).filter(|&t| l.fails(4, t)).count() as f64 / 2000.0;
        assert!((0.27..0.33).contains(&rate), "{rate}");
    }

    #[test]
    fn a_client_loses_exactly_per_client_helper_links() {
        let l = Links::Fail { workers: vec![], p: 1.0, from: 1, seed: 5, per_client: Some(2) };
        assert!(l.failed_helpers(3, 6, 0).is_empty(), "from iteration 1");
        let mut seen = [0usize; 6];
        for t in 1..3001 {
            let f = l.failed_helpers(3, 6, t);
            assert_eq!(f.len(), 2);
            assert!(f[0] < f[1] && f[1] < 6);
            f.iter().for_each(|&h| seen[h] += 1);
        }
        // uniform: each helper fails in 1/3 of the iterations
        assert!(seen.iter().all(|&c| (900..1100).contains(&c)), "{seen:?}");
        assert_eq!(l.failed_helpers(3, 6, 7), l.failed_helpers(3, 6, 7));
        let each = Links::Fail { workers: vec![1], p: 0.25, from: 0, seed: 5, per_client: None };
        let total: usize = (0..2000).map(|t| each.failed_helpers(1, 4, t).len()).sum();
        assert!((1800..2200).contains(&total), "{total}: p·n_h per iteration");
        assert!(each.failed_helpers(2, 4, 0).is_empty(), "client 2 is not listed");
    }

    #[test]
    fn delays_are_tau_times_a_geometric_count() {
        let l = Links::Delay { up: vec![0.01, 0.02], down: vec![0.0, 0.005], p: 0.5, seed: 2 };
        let hop = |worker, t, up| Hop { worker, t, up, kind: 4, round: 0 };
        assert_eq!(l.delay(hop(1, 0, false)), 0.0);
        let d: Vec<f64> = (0..4000).map(|t| l.delay(hop(2, t, true))).collect();
        assert!(d.iter().all(|v| (v / 0.02).fract().abs() < 1e-9 && *v >= 0.02));
        let mean = d.iter().sum::<f64>() / d.len() as f64;
        assert!((mean / 0.04 - 1.0).abs() < 0.05, "mean {mean}: τ/(1 − p) = 0.04");
        assert_eq!(l.delay(hop(2, 7, true)), l.delay(hop(2, 7, true)));
    }
}
