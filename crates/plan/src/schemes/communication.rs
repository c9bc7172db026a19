//! Gradient codes that cut the upload (master–worker stars).
//!
//! - **`cegc`** — communication-efficient gradient coding from a linear code (CommFR-GC; Kadhe,
//!   Koyluoglu, Ramchandran; notes `seed-001-cegc.md`): the n workers form n/N groups of
//!   N = s + m contiguous workers; every worker of a group holds the group's data (fractional
//!   repetition placement) and uploads one combination of the K = m chunks of the group's
//!   gradient (column j of the [N, K] code's generator): ⌈len/m⌉ values. The master decodes each
//!   group as soon as what arrived from it is decodable (a rank test, not a count) and sums the
//!   groups; any s stragglers, and more when they are spread over groups.
//! - **`agc`** — adaptive gradient coding (Cao, Yan, Tang, Han; notes `seed-003-agc.md`): cyclic
//!   placement of d parts per worker; workers send round after round of ⌈len/L⌉ values; the
//!   master stops after r_s = ⌈L/(d − s)⌉ rounds of the n − s active workers, without knowing s.
//! - **`g-agc`** — group AGC: groups of d workers holding their group's d parts (AGC with
//!   n = d), plus a last group of n − md workers with AGC inside; each group decodes on its own.
//! - **`cgc`**, **`g-cgc`** — Ye and Abbe's communication-computation efficient gradient coding
//!   (the AGC paper's baseline): AGC's first round alone, with L = m sub-vectors and d = s + m
//!   parts per worker: one upload of ⌈len/m⌉ values, any n − s workers decode (per group).
//!
//! The payload is the gradient and the loss (p + 1 values); chunks and sub-vectors are
//! contiguous, the last one zero-padded (the padding is never sent).

use outrun_codes::{agc_groups, AgcCode, LinearCode};

use crate::alloc::WeightedSet;
use crate::plan::{Plan, PlanCode};
use crate::rules::{Encoding, GroupSpec, Rule};
use crate::schemes::{star, worker};
use outrun_config::{AgcConfig, CegcConfig, CgcConfig, Config, ConfigError, LinearChoice, SchemeConfig};

/// Largest condition number of a group code's decoding systems (over the survivor sets
/// checked) for which the decode is exact to ~1e-8 relative.
const LINEAR_MAX_COND: f64 = 1e8;

/// Survivor sets checked when `outrun plan` reports a linear code's behaviour with s missing.
const PROFILE_SETS: usize = 200;

/// Largest relative decode error (over the straggler sets checked) an AGC code may have: the
/// notes' §8.H bound for plain AGC at N = 20.
const AGC_MAX_ERROR: f64 = 1e-6;

/// Straggler sets checked per draw when an AGC code is chosen (all of them when fewer).
const AGC_SCREEN_PATTERNS: usize = 200;

/// A Gaussian generator: the best of `draws` by worst condition number over K-subsets (all of
/// them when at most 2000, else a seeded sample of 200).
fn gaussian(len: usize, dim: usize, seed: u64, draws: usize) -> LinearCode {
    let subsets: Vec<Vec<usize>> = if outrun_codes::binomial(len, dim) <= 2000 {
        outrun_codes::combinations(len, dim).collect()
    } else {
        let mut rng = outrun_codes::Rng::from_key(&[seed, outrun_codes::domain::SCREEN, len as u64, dim as u64]);
        (0..200).map(|_| rng.choose(len, dim)).collect()
    };
    (0..draws.max(1) as u64)
        .map(|d| {
            let code = LinearCode::gaussian(len, dim, seed.wrapping_add(d.wrapping_mul(0x9e37_79b9)))
                .expect("dimensions validated");
            let worst = subsets
                .iter()
                .map(|t| outrun_codes::condition(&code.g.select(ndarray::Axis(1), t)))
                .fold(0.0f64, f64::max);
            (code, worst)
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("at least one draw")
        .0
}

pub(crate) fn cegc(cfg: &Config, c: &CegcConfig, samples: usize) -> Result<Plan, ConfigError> {
    let (n, s, m) = (c.workers, c.s, c.m);
    let group = s + m;
    let code = match c.code {
        LinearChoice::Gaussian => gaussian(group, m, cfg.run.seed, c.draws),
        LinearChoice::Systematic => {
            LinearCode::systematic(group, m).map_err(|e| ConfigError::new("scheme.m", e.to_string()))?
        }
        LinearChoice::Repetition => LinearCode::repetition(group),
        LinearChoice::Ldpc => LinearCode::ldpc(group, m, cfg.run.seed, c.draws)
            .map_err(|e| ConfigError::new("scheme.code", e.to_string()))?,
    };
    let profile = code.profile(s, PROFILE_SETS, cfg.run.seed);
    if c.code != LinearChoice::Ldpc && (profile.decodable < profile.sets || profile.worst_cond > LINEAR_MAX_COND) {
        return Err(ConfigError::new(
            "scheme.code",
            format!(
                "= \"{}\": with s = {s} of a group's {group} workers missing, {} of {} {} sets of {} decode and the worst κ(G_T) is {:.1e} (above {LINEAR_MAX_COND:e}, relative error up to ~{:.0e}): not exact; use code = \"gaussian\" or smaller groups (scheme.s + scheme.m)",
                c.code.name(),
                profile.decodable,
                if profile.exhaustive { "all" } else { "a sample of" },
                profile.sets,
                group - s,
                profile.worst_cond,
                profile.worst_cond * f64::EPSILON
            ),
        ));
    }
    // MDS codes decode with any s missing; LDPC peeling may stall earlier
    let tolerates = if profile.decodable == profile.sets {
        s
    } else {
        (0..s)
            .rev()
            .find(|&e| {
                code.profile(e, PROFILE_SETS, cfg.run.seed).decodable
                    == PROFILE_SETS.min(outrun_codes::binomial(group, e) as usize)
            })
            .unwrap_or(0)
    };
    let groups = n / group;
    let data = WeightedSet::full(samples).split_even(groups);
    let nodes = (0..n)
        .map(|w| worker(w + 1, vec![data[w / group].clone()], Encoding::Chunked { code: 0, column: w % group }))
        .collect();
    let f = c.byzantine;
    let specs = (0..groups).map(|g| GroupSpec { first: g * group, size: group, code: 0, byzantine: f }).collect();
    let rule = match c.code {
        LinearChoice::Ldpc => "as soon as what arrived peels".to_string(),
        _ => format!("from any {m} of its workers (its code's rank test)"),
    };
    let title = format!(
        "communication-efficient gradient coding: {groups} group(s) of {group} workers sharing their group's data, each uploading 1/{m} of a gradient; a group decodes {rule}{}",
        super::master_worker::robust(s, f).replace("it waits", "each group waits")
    );
    Ok(star(
        cfg,
        title,
        samples,
        s,
        nodes,
        Rule::Groups { groups: specs },
        vec![PlanCode::Linear { profile, tolerates, code }],
    ))
}

pub(crate) fn agc(cfg: &Config, c: &AgcConfig, samples: usize) -> Result<Plan, ConfigError> {
    let (n, d, l) = (c.workers, c.d, c.rounds);
    let grouped = matches!(cfg.scheme, SchemeConfig::GAgc(_));
    let title = if grouped {
        format!("group adaptive gradient coding: {} group(s), d = {d} parts per worker, up to L = {l} rounds of 1/{l} of a gradient; each group tolerates d − 1 stragglers", agc_groups(n, d).len())
    } else {
        format!("adaptive gradient coding: d = {d} parts per worker, up to L = {l} rounds of 1/{l} of a gradient; s ≤ {} stragglers cost ⌈L/(d − s)⌉ rounds", d - 1)
    };
    let search = |size: usize, seed: u64| AgcCode::search(size, d.min(size), l, seed, c.draws, AGC_SCREEN_PATTERNS);
    staircase(cfg, samples, (n, d, grouped, c.draws), ("scheme.rounds", l), title, search)
}

pub(crate) fn cgc(cfg: &Config, c: &CgcConfig, samples: usize) -> Result<Plan, ConfigError> {
    let (n, s, m) = (c.workers, c.s, c.m);
    let d = s + m;
    let grouped = matches!(cfg.scheme, SchemeConfig::GCgc(_));
    let title = format!(
        "{}communication-computation efficient gradient coding (Ye–Abbe): d = s + m = {d} parts per worker, one upload of 1/{m} of a gradient; {}",
        if grouped { "group " } else { "" },
        if grouped {
            format!("{} group(s), each decoding from any of its workers but s = {s}", agc_groups(n, d).len())
        } else {
            format!("the master decodes from any n − s = {} workers", n - s)
        }
    );
    // a group smaller than d (G-CGC's last, when n is no multiple of d) holds every part: its
    // code is CGC on `size` workers with the same m
    let search = |size: usize, seed: u64| {
        let m = m.min(size);
        AgcCode::search_one_round(size, d.min(size) - m, m, seed, c.draws, AGC_SCREEN_PATTERNS)
    };
    staircase(cfg, samples, (n, d, grouped, c.draws), ("scheme.m", m), title, search)
}

/// A star of AGC-family codes (AGC, G-AGC, CGC, G-CGC): `n` workers in one group or G-AGC's
/// groups, d parts each, one code per group (`search(size, seed)`), whose decode error must be
/// below [`AGC_MAX_ERROR`] (else `knob`, the key that sets the sub-vectors, is named).
fn staircase(
    cfg: &Config,
    samples: usize,
    (n, d, grouped, draws): (usize, usize, bool, usize),
    (knob, l): (&str, usize),
    title: String,
    search: impl Fn(usize, u64) -> AgcCode,
) -> Result<Plan, ConfigError> {
    let groups: Vec<Vec<usize>> = if grouped { agc_groups(n, d) } else { vec![(0..n).collect()] };
    let data = WeightedSet::full(samples).split_even(n);
    let mut codes = vec![];
    let mut nodes = vec![];
    let mut specs = vec![];
    for (g, members) in groups.iter().enumerate() {
        let size = members.len();
        let code = search(size, cfg.run.seed ^ (g as u64).wrapping_mul(0x51ed));
        if code.worst_error.is_nan() || code.worst_error > AGC_MAX_ERROR {
            return Err(ConfigError::new(
                knob,
                format!(
                    "= {l}: the best code of {draws} draws for {size} workers with d = {d} decodes with relative error up to {:.1e} (κ(Ê) {:.1e}), above {AGC_MAX_ERROR:e}: it would not be exact; use fewer sub-vectors, more scheme.draws{}",
                    code.worst_error,
                    code.worst_cond,
                    if grouped { "" } else { ", or its group version (g-agc, g-cgc)" }
                ),
            ));
        }
        for (j, &w) in members.iter().enumerate() {
            // the group's workers hold the parts with the group's indices, cyclically inside it
            let parts = code.parts_of(j).into_iter().map(|i| data[members[i]].clone()).collect();
            nodes.push(worker(w + 1, parts, Encoding::Rounds { code: g, worker: j }));
        }
        specs.push(GroupSpec { first: members[0], size, code: g, byzantine: 0 });
        codes.push(PlanCode::Adaptive { code });
    }
    let s =
        codes.iter().map(|c| if let PlanCode::Adaptive { code } = c { code.tolerates() } else { 0 }).min().unwrap_or(0);
    Ok(star(cfg, title, samples, s, nodes, Rule::Groups { groups: specs }, codes))
}
