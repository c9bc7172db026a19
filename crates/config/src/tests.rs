//! Config parsing and validation: defaults, overrides, field-naming errors, round trips.

use super::*;

const BASE: &str = r#"
[run]
name = "t"
iterations = 5
[data]
kind = "linear-synthetic"
samples = 100
features = 4
[model]
loss = "least-squares"
lr = 0.1
[scheme]
kind = "gc-cyclic"
workers = 6
s = 2
"#;

fn parse_with(sets: &[&str]) -> Result<Config, ConfigError> {
    parse(BASE, &sets.iter().map(|s| s.to_string()).collect::<Vec<_>>())
}

#[test]
fn parses_defaults_and_ranks() {
    let c = parse_with(&[]).unwrap();
    assert_eq!(c.run.out_dir, "runs");
    assert_eq!(c.run.seed, 1);
    assert_eq!(c.ranks(), 7);
    assert_eq!(c.stragglers, StragglerConfig::None);
    let ring = parse_with(&["scheme.kind=rar", "scheme.s=0"]).unwrap();
    assert_eq!(ring.ranks(), 6);
    let halving = parse_with(&["scheme.kind=rar", "scheme.s=0", "scheme.algorithm=\"halving-doubling\""]).unwrap();
    assert!(matches!(&halving.scheme, SchemeConfig::Rar(c) if c.algorithm == crate::RingAlgorithm::HalvingDoubling));
    assert_eq!(parse(&halving.to_toml(), &[]).unwrap(), halving);
    // round trip through the resolved TOML
    assert_eq!(parse(&c.to_toml(), &[]).unwrap(), c);
}

#[test]
fn overrides_are_typed() {
    let c = parse_with(&["scheme.s=1", "run.out_dir=/tmp/x y", "model.lr=1e-3", "run.trajectory=true"]).unwrap();
    assert_eq!(c.scheme.s(), 1);
    assert_eq!(c.run.out_dir, "/tmp/x y");
    assert_eq!(c.model().lr, 1e-3);
    assert!(c.run.trajectory);
    let c = parse_with(&["stragglers.model=fixed", "stragglers.workers=[1, 3]"]).unwrap();
    assert!(matches!(&c.stragglers, StragglerConfig::Fixed(l) if l.workers == vec![1, 3]));
    // an empty value removes a key; model = none keeps other parameters without complaint
    let c = parse_with(&[
        "stragglers.model=fixed",
        "stragglers.workers=[1]",
        "stragglers.factor=2",
        "stragglers.model=fail-stop",
        "stragglers.factor=",
    ])
    .unwrap();
    assert!(matches!(&c.stragglers, StragglerConfig::FailStop(l) if l.factor.is_none()));
    assert!(parse_with(&["stragglers.model=none", "stragglers.factor=2"]).is_ok());
    assert!(!parse_with(&["run.trajectory="]).unwrap().run.trajectory);
}

fn field_of(sets: &[&str]) -> String {
    parse_with(sets).unwrap_err().field
}

/// serde's type errors (`invalid type: floating point `1000.0`, expected u64`) in plain words,
/// with the mend where there is one.
#[test]
fn type_errors_say_what_the_field_takes() {
    let said = |set: &str| {
        let e = parse_with(&["stragglers.model=fixed", "stragglers.factor=2", set]).unwrap_err();
        format!("{}: {}", e.field, e.message)
    };
    let cases = [
        ("run.iterations=1e3", "run.iterations: must be a whole number, 0 or more, not 1000.0 (a float in TOML: write 1000)"),
        ("run.iterations=2.5", "run.iterations: must be a whole number, 0 or more, not 2.5"),
        ("scheme.workers=-3", "scheme.workers: must be a whole number, 0 or more, not -3"),
        ("run.deadline=fast", "run.deadline: must be a number, not \"fast\""),
        ("run.deadline=[1]", "run.deadline: must be a number, not a list"),
        ("model.lr=true", "model.lr: must be a number, not true"),
        ("stragglers.workers=3", "stragglers.workers: must be a list (e.g. [1, 2]), not 3"),
        ("data.standardize=yes", "data.standardize: must be true or false, not \"yes\""),
        (
            "run.seed=99999999999999999999",
            "run.seed: must be a whole number, 0 or more, not \"99999999999999999999\" (larger than TOML's largest integer, 9223372036854775807)",
        ),
    ];
    for (set, want) in cases {
        assert_eq!(said(set), want, "{set}");
    }
}

#[test]
fn errors_name_the_field() {
    assert_eq!(field_of(&["scheme.s=6"]), "scheme.s");
    assert_eq!(field_of(&["scheme.sx=1"]), "scheme.sx");
    // the all-reduce's schedule: rar only, one of the four names
    assert_eq!(field_of(&["scheme.kind=rar", "scheme.s=0", "scheme.algorithm=\"tree\""]), "scheme.algorithm");
    assert_eq!(field_of(&["scheme.kind=umw", "scheme.s=0", "scheme.algorithm=\"auto\""]), "scheme.algorithm");
    assert_eq!(field_of(&["scheme.kind=gc-frac", "scheme.s=3"]), "scheme.s");
    assert_eq!(field_of(&["scheme.kind=umw"]), "scheme.s");
    assert_eq!(field_of(&["model.lr=-1"]), "model.lr");
    assert_eq!(field_of(&["run.iterations=0"]), "run.iterations");
    assert_eq!(field_of(&["data.kind=libsvm"]), "data.path");
    assert_eq!(field_of(&["stragglers.model=shifted-exp", "stragglers.a=1e-4", "stragglers.mu=1e4"]), "timing.compute");
    assert_eq!(field_of(&["stragglers.model=fixed", "stragglers.workers=[7]"]), "stragglers.workers");
    assert_eq!(field_of(&["stragglers.model=fixed", "stragglers.workers=[1]", "stragglers.p=0.5"]), "stragglers.p");
    assert_eq!(
        field_of(&["stragglers.model=fail-stop", "stragglers.workers=[1]", "scheme.kind=rar", "scheme.s=0"]),
        "stragglers.model"
    );
    assert_eq!(field_of(&["bogus.key=1"]), "bogus");
    assert_eq!(field_of(&["network.bandwidth=fast"]), "network.bandwidth");
    assert_eq!(field_of(&["network.node_bandwidth=[1, 2]"]), "network.node_bandwidth");
    assert_eq!(
        field_of(&["timing.compute=modelled", "stragglers.model=weibull", "stragglers.a=1e-4", "stragglers.mu=1e4"]),
        "stragglers.shape"
    );
    assert_eq!(field_of(&["data.samples=3"]), "data.samples");
    // a search for a code is bounded: every scheme that draws codes takes at most MAX_DRAWS
    // (4·10⁹ draws kept `outrun check` busy for days)
    for (name, text) in [
        ("demo", include_str!("../../../configs/demo.toml")),
        ("cr", include_str!("../../../configs/cr-3x2.toml")),
        ("cegc", include_str!("../../../configs/cegc-8.toml")),
        ("agc", include_str!("../../../configs/agc-12.toml")),
        ("cgc", include_str!("../../../configs/cgc-12.toml")),
        ("gc-sc", include_str!("../../../configs/gcsc-20.toml")),
        ("gc-dc", include_str!("../../../configs/gcdc-20.toml")),
    ] {
        let at = |d: usize| parse(text, &[format!("scheme.draws={d}")]);
        let e = at(crate::scheme::MAX_DRAWS + 1).unwrap_err();
        assert_eq!(e.field, "scheme.draws", "{name}: {e}");
        assert!(e.to_string().contains("at most 10000"), "{name}: {e}");
        assert!(at(crate::scheme::MAX_DRAWS).is_ok(), "{name}");
    }
    // a list of worker ids names each worker once
    assert_eq!(field_of(&["stragglers.model=fixed", "stragglers.workers=[2, 2]"]), "stragglers.workers");
    let twice = parse_with(&["faults.kind=sign-flip", "faults.workers=[2, 3, 2]"]).unwrap_err();
    assert_eq!(twice.to_string(), "faults.workers: contains worker 2 twice (at positions 1 and 3)");
    // CGC: s_max is needed, and d = s + m parts fit the workers
    assert_eq!(field_of(&["scheme.kind=cgc", "scheme.s="]), "scheme.s");
    assert_eq!(field_of(&["scheme.kind=cgc", "scheme.s=3", "scheme.m=4"]), "scheme.m");
    assert_eq!(field_of(&["scheme.kind=g-cgc", "scheme.s=1", "scheme.m=0"]), "scheme.m");
    assert_eq!(field_of(&["scheme.kind=cgc", "scheme.s=1", "scheme.rounds=2"]), "scheme.rounds");
    assert!(parse_with(&["scheme.kind=g-cgc", "scheme.s=2", "scheme.m=2"]).is_ok());
    let e = parse_with(&["scheme.s=6"]).unwrap_err();
    assert_eq!(e.to_string(), "scheme.s = 6: must be less than scheme.workers = 6");
    assert!(!e.to_string().contains('\n'));
}

#[test]
fn rates_parse_with_units() {
    assert_eq!(Rate::Text("100mbit".into()).bytes_per_second(), Ok(12.5e6));
    assert_eq!(Rate::Text("1gbit".into()).bytes_per_second(), Ok(125e6));
    assert_eq!(Rate::BytesPerSecond(5.0).bytes_per_second(), Ok(5.0));
    assert!(Rate::Text("12 parsecs".into()).bytes_per_second().is_err());
    let c = parse_with(&["network.bandwidth=\"20mbit\"", "network.latency=1e-4"]).unwrap();
    assert_eq!(c.network.bandwidth.unwrap().bytes_per_second(), Ok(2.5e6));
    assert!(c.network.downlink);
}

#[test]
fn syntax_errors_give_the_line() {
    let e = parse("[run]\nname = \n", &[]).unwrap_err();
    assert!(e.message.contains("line 2"), "{e}");
    assert!(!e.to_string().contains('\n'));
    assert_eq!(parse_with(&["noequals"]).unwrap_err().field, "--set");
}

#[test]
fn cr_workers_follow_from_the_tree() {
    let c = parse_with(&["scheme.kind=cr", "scheme.n=3", "scheme.layers=2", "scheme.s=1"]).unwrap_err();
    // scheme.workers = 6 is inconsistent with a (3,2) tree of 12 workers
    assert_eq!(c.field, "scheme.workers");
    let mut t: toml::Table = toml::from_str(BASE).unwrap();
    t["scheme"].as_table_mut().unwrap().remove("workers");
    let text = toml::to_string(&t).unwrap();
    let c =
        parse(&text, &["scheme.kind=cr".into(), "scheme.n=3".into(), "scheme.layers=2".into(), "scheme.s=1".into()])
            .unwrap();
    assert_eq!(c.workers(), 12);
    assert_eq!(c.ranks(), 13);
}

#[test]
fn tagged_sections_name_the_owner_of_a_misplaced_key() {
    let e = parse_with(&["scheme.kind=umw", "scheme.s=", "scheme.n=3"]).unwrap_err();
    assert_eq!(e.field, "scheme.n");
    assert!(e.message.contains("only used by scheme.kind = \"cr\""), "{e}");
    assert!(e.message.ends_with("(remove it, or clear it with --set scheme.n=)"), "{e}");
    // every key of another kind at once, each with its owners, and the overrides that clear them
    let e = parse_with(&["scheme.kind=umw", "scheme.s=", "scheme.n=3", "scheme.layers=2", "scheme.code=\"cyclic\""])
        .unwrap_err();
    assert_eq!(e.field, "scheme.code");
    assert_eq!(
        e.message,
        "is only used by scheme.kind = \"cr\" or \"cegc\" or \"hcmm\" or \"uniform-coded\", not \"umw\"; so are \
         scheme.layers (\"cr\"), scheme.n (\"cr\" or \"gc-dc\") (remove them, or clear them with --set scheme.code= \
         --set scheme.layers= --set scheme.n=)"
    );
    // a key most kinds use names the few that do not (28 names were a 480-character line)
    let e = parse_with(&["scheme.kind=uncoded-pagerank", "scheme.s="]).unwrap_err();
    assert_eq!(
        (e.field.as_str(), e.message.as_str()),
        (
            "scheme.workers",
            "is used by every scheme.kind but \"uncoded-pagerank\", \"coded-pagerank\", \"arc\", \"amc\" and \
             \"hier-uncoded\" (remove it, or clear it with --set scheme.workers=)"
        )
    );
    let e = parse_with(&["scheme.kind=coded-pagerank"]).unwrap_err();
    assert!(e.message.contains("so is scheme.workers (every kind but \"coded-pagerank\", "), "{e}");
    // a key no kind uses (a typo) is named first
    let e = parse_with(&["scheme.kind=umw", "scheme.s=", "scheme.n=3", "scheme.nn=3"]).unwrap_err();
    assert_eq!(e.field, "scheme.nn");
    assert!(e.message.starts_with("unknown field `nn`"), "{e}");
    let e = parse_with(&["scheme.kind=teleport"]).unwrap_err();
    assert_eq!(e.field, "scheme.kind");
    assert!(e.message.contains("\"gc-cyclic\""), "{e}");
    let e = parse_with(&["stragglers.model=markov", "stragglers.p=0.05", "stragglers.a=1e-5", "stragglers.mu_slow=10"])
        .unwrap_err();
    assert_eq!(e.field, "stragglers.mu_fast");
    // a type error inside a variant keeps the whole path
    assert_eq!(field_of(&["scheme.s=\"two\""]), "scheme.s");
    let e = parse_with(&["model.loss=1"]).unwrap_err();
    assert_eq!(e.field, "model.loss");
    assert!(!e.message.contains("unit variant"), "{e}");
}

#[test]
fn per_worker_parameters_and_files() {
    let c = parse_with(&[
        "timing.compute=modelled",
        "stragglers.model=shifted-exp",
        "stragglers.a=[1e-5, 1e-5, 2e-5, 1e-5, 1e-5, 1e-5]",
        "stragglers.mu=1e4",
    ])
    .unwrap();
    assert_eq!(parse(&c.to_toml(), &[]).unwrap(), c);
    let e = parse_with(&[
        "timing.compute=modelled",
        "stragglers.model=shifted-exp",
        "stragglers.a=[1e-5, 1e-5]",
        "stragglers.mu=1e4",
    ])
    .unwrap_err();
    assert_eq!(e.field, "stragglers.a");
    assert!(e.message.contains("2 values but there are 6 workers"), "{e}");
    let e = parse_with(&[
        "timing.compute=modelled",
        "stragglers.model=weibull",
        "stragglers.a=1e-5",
        "stragglers.mu=[1, 1, 1, 1, -1, 1]",
        "stragglers.shape=1",
    ])
    .unwrap_err();
    assert_eq!(e.field, "stragglers.mu");
    assert!(e.message.contains("(worker 5)"), "{e}");
    let mut c = parse_with(&["timing.compute=modelled", "stragglers.model=weibull", "stragglers.file=w.csv"]).unwrap();
    let text = "worker,a,mu,shape\n1,1e-5,1e4,1\n2,1e-5,1e4,2\n3,1e-5,1e4,1\n4,1e-5,1e4,1\n5,1e-5,1e4,1\n6,1e-5,2e4,1 # fast\n";
    c.stragglers.resolve_file(text, "w.csv", 6).unwrap();
    assert!(
        matches!(&c.stragglers, StragglerConfig::Weibull(l) if l.mu == Some(PerWorker::Each(vec![1e4, 1e4, 1e4, 1e4, 1e4, 2e4])) && l.file.is_none())
    );
    assert!(c.validate().is_ok());
    let e = c.clone().stragglers.resolve_file("1,1e-5,1e4,1\n", "w.csv", 6);
    assert!(e.is_ok(), "resolving twice is a no-op once the file is gone");
    let mut c =
        parse_with(&["timing.compute=modelled", "stragglers.model=shifted-exp", "stragglers.file=w.csv"]).unwrap();
    let e = c.stragglers.resolve_file("1,1e-5\n", "w.csv", 6).unwrap_err();
    assert_eq!(e.to_string(), "stragglers.file: w.csv:1: expected 3 comma-separated values (worker,a,mu), found 2");
    // a value out of range is named by its line, not as a list position the user never wrote
    let text = "# a, mu\n1,1e-5,1e4\n2,1e-5,1e4\n3,1e-5,-5\n4,1e-5,1e4\n5,1e-5,1e4\n6,1e-5,1e4\n";
    let e = c.stragglers.resolve_file(text, "w.csv", 6).unwrap_err();
    assert_eq!(e.field, "stragglers.file");
    assert!(e.message.starts_with("w.csv:4: mu = -5: must be"), "{e}");
    let mut c = parse_with(&["links.model=delay", "links.file=l.csv"]).unwrap();
    let text =
        "worker,tau_up,tau_down\n1,0.01,0.001\n2,0.01,0.001\n3,0.01,0.001\n4,0.01,0.001\n5,7200,0.001\n6,0.01,0.001\n";
    let e = c.links.resolve_file(text, "l.csv", 6).unwrap_err();
    assert_eq!(e.to_string(), "links.file: l.csv:6: tau_up = 7200: must be a time in [0, 3600] seconds");
}

#[test]
fn extreme_values_are_refused_with_the_bound() {
    for (set, field) in [
        ("run.deadline=1e30", "run.deadline"),
        ("timing.a=1e300", "timing.a"),
        ("scheme.workers=4294967296", "scheme.workers"),
        ("run.iterations=1000000000000", "run.iterations"),
        ("network.latency=-1", "network.latency"),
    ] {
        assert_eq!(field_of(&[set]), field, "{set}");
    }
    assert_eq!(
        field_of(&["stragglers.model=fixed", "stragglers.workers=[1]", "stragglers.factor=1e300"]),
        "stragglers.factor"
    );
    assert_eq!(
        field_of(&[
            "timing.compute=modelled",
            "stragglers.model=shifted-exp",
            "stragglers.a=1e-4",
            "stragglers.mu=1e-300"
        ]),
        "stragglers.mu"
    );
    assert_eq!(
        field_of(&[
            "timing.compute=modelled",
            "stragglers.model=weibull",
            "stragglers.a=1e-4",
            "stragglers.mu=1e4",
            "stragglers.shape=0.01"
        ]),
        "stragglers.shape"
    );
    let e = parse_with(&["scheme.kind=cr", "scheme.workers=", "scheme.n=4294967296", "scheme.layers=2", "scheme.s=1"])
        .unwrap_err();
    assert_eq!(e.field, "scheme.n");
}

/// The communication-efficient and adaptive codes' keys: group sizes, code constraints, and the
/// bound on an adaptive code's size.
#[test]
fn cegc_and_agc_constraints_name_the_field() {
    let cegc = ["scheme.kind=cegc", "scheme.workers=8", "scheme.s=2", "scheme.m=2"];
    let with = |extra: &[&str]| {
        let mut v = cegc.to_vec();
        v.extend_from_slice(extra);
        parse_with(&v)
    };
    assert!(with(&[]).is_ok());
    assert_eq!(with(&["scheme.m=0"]).unwrap_err().field, "scheme.m");
    assert_eq!(with(&["scheme.s=1"]).unwrap_err().field, "scheme.workers", "3 does not divide 8");
    assert_eq!(with(&["scheme.s=7"]).unwrap_err().field, "scheme.s");
    assert_eq!(with(&["scheme.code=repetition"]).unwrap_err().field, "scheme.m");
    let ldpc = with(&["scheme.code=ldpc"]).unwrap_err();
    assert_eq!(ldpc.field, "scheme.code");
    assert!(ldpc.message.contains("at least 10"), "{ldpc}");
    assert!(with(&["scheme.code=ldpc", "scheme.workers=20", "scheme.s=5", "scheme.m=5"]).is_ok());
    let agc = |extra: &[&str]| {
        let mut v = vec!["scheme.kind=agc", "scheme.s=", "scheme.workers=12", "scheme.d=4", "scheme.rounds=12"];
        v.extend_from_slice(extra);
        parse_with(&v)
    };
    assert!(agc(&[]).is_ok());
    assert_eq!(agc(&["scheme.d=13"]).unwrap_err().field, "scheme.d");
    assert_eq!(agc(&["scheme.rounds=65"]).unwrap_err().field, "scheme.rounds");
    let big = agc(&["scheme.workers=100", "scheme.rounds=6"]).unwrap_err();
    assert_eq!(big.field, "scheme.rounds");
    assert!(big.message.contains("N·L = 600") && big.message.contains("g-agc"), "{big}");
    // G-AGC bounds its largest group (d + n mod d workers), not all of them
    assert!(agc(&["scheme.kind=g-agc", "scheme.workers=100", "scheme.d=4", "scheme.rounds=60"]).is_ok());
    assert_eq!(
        agc(&["scheme.kind=g-agc", "scheme.workers=100", "scheme.d=10", "scheme.rounds=64"]).unwrap_err().field,
        "scheme.rounds"
    );
}

#[test]
fn clustered_schemes_name_the_field_and_round_trip() {
    let dc = |extra: &[&str]| {
        let mut v = vec![
            "scheme.kind=gc-dc",
            "scheme.s=",
            "scheme.workers=12",
            "scheme.clusters=4",
            "scheme.r=2",
            "scheme.n=2",
        ];
        v.extend_from_slice(extra);
        parse_with(&v)
    };
    let c = dc(&["scheme.ssi=observed", "scheme.order=rate", "scheme.tau=0.5"]).unwrap();
    assert_eq!(parse(&c.to_toml(), &[]).unwrap(), c, "the setup message re-parses the resolved TOML");
    let sc = dc(&["scheme.kind=gc-sc", "scheme.n="]).unwrap();
    assert_eq!(parse(&sc.to_toml(), &[]).unwrap(), sc);
    assert_eq!(sc.scheme.s(), 1);
    for (set, field) in [
        ("scheme.clusters=5", "scheme.clusters"),
        ("scheme.r=4", "scheme.r"),
        ("scheme.r=0", "scheme.r"),
        ("scheme.n=5", "scheme.n"),
        ("scheme.n=", "scheme.n"),
        ("scheme.tau=-1", "scheme.tau"),
        ("scheme.ssi=psychic", "scheme.ssi"),
    ] {
        assert_eq!(dc(&[set]).unwrap_err().field, field, "{set}");
    }
    // the dynamic keys do not belong to gc-sc; perfect information is for the simulator only
    assert_eq!(dc(&["scheme.kind=gc-sc"]).unwrap_err().field, "scheme.n");
    assert_eq!(dc(&["scheme.ssi=perfect"]).unwrap().validate_for_engine().unwrap_err().field, "scheme.ssi");
    assert!(c.validate_for_engine().is_ok());
}

#[test]
fn heterogeneous_and_time_varying_straggler_laws_name_the_field() {
    let with = |extra: &[&str]| {
        let mut v = vec!["timing.compute=modelled"];
        v.extend_from_slice(extra);
        parse_with(&v)
    };
    let het = [
        "stragglers.model=markov",
        "stragglers.p=0.05",
        "stragglers.a=1e-6",
        "stragglers.mu_fast_max=5e5",
        "stragglers.slow_factor=10",
    ];
    let c = with(&het).unwrap();
    assert_eq!(parse(&c.to_toml(), &[]).unwrap(), c);
    let mut both = het.to_vec();
    both.push("stragglers.mu_slow=1");
    assert_eq!(with(&both).unwrap_err().field, "stragglers.mu_fast_max");
    assert_eq!(with(&het[..4]).unwrap_err().field, "stragglers.slow_factor");
    let rates = [
        "stragglers.model=rates",
        "stragglers.p=0.05",
        "stragglers.a=1e-6",
        "stragglers.mu_max=5e5",
        "stragglers.tau=1e5",
        "stragglers.initial_slow=3",
    ];
    let c = with(&rates).unwrap();
    assert_eq!(parse(&c.to_toml(), &[]).unwrap(), c);
    let mut bad = rates.to_vec();
    bad.push("stragglers.tau=6e5");
    assert_eq!(with(&bad).unwrap_err().field, "stragglers.tau");
    assert_eq!(with(&rates[..4]).unwrap_err().field, "stragglers.tau");
    assert_eq!(parse_with(&rates).unwrap_err().field, "timing.compute", "the law needs modelled timing");
}

const MATVEC: &str = "[run]\nname='m'\niterations=2\n[job]\nkind='matvec'\n[matrix]\nrows=100\ncols=20\n[scheme]\nkind='hcmm'\nworkers=4\na=1e-4\nmu=1e4\n";

/// Every mat-vec scheme's resolved TOML parses back to the same config (rank 0 broadcasts it
/// that way), and mistakes name their field.
#[test]
fn matvec_configs_round_trip_and_name_the_field() {
    for kind in ["hcmm", "uniform-uncoded", "lb-uncoded", "uniform-coded"] {
        let c = parse(MATVEC, &[format!("scheme.kind={kind}")]).unwrap();
        assert_eq!(parse(&c.to_toml(), &[]).unwrap(), c, "{kind}");
    }
    let c = parse(
        MATVEC,
        &["job.power=true".into(), "matrix.cols=100".into(), "scheme.code=lt".into(), "vector.path=x.txt".into()],
    )
    .unwrap();
    assert_eq!(parse(&c.to_toml(), &[]).unwrap(), c);
    let field =
        |sets: &[&str]| parse(MATVEC, &sets.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap_err().field;
    assert_eq!(field(&["scheme.kind=umw", "scheme.a=", "scheme.mu="]), "scheme.kind");
    assert_eq!(field(&["job.power=true"]), "matrix.cols");
    assert_eq!(field(&["matrix.rows="]), "matrix.rows");
    assert_eq!(field(&["matrix.path=a.mtx"]), "matrix.rows");
    assert_eq!(field(&["scheme.kind=uniform-uncoded", "scheme.code=lt"]), "scheme.code");
    assert_eq!(field(&["scheme.mu=[1.0, 2.0]"]), "scheme.mu");
    assert_eq!(field(&["scheme.overhead=-1"]), "scheme.overhead");
    assert_eq!(field(&["data.kind=libsvm"]), "data");
    assert_eq!(field(&["job.kind=gd"]), "matrix");
    assert_eq!(field(&["matrix.rows=3"]), "matrix.rows");
    // a gradient-descent config cannot run a mat-vec scheme
    let gd = "[run]\nname='g'\niterations=2\n[data]\nkind='linear-synthetic'\nsamples=100\nfeatures=3\n[model]\nloss='least-squares'\nlr=0.1\n[scheme]\nkind='hcmm'\nworkers=4\n";
    assert_eq!(parse(gd, &[]).unwrap_err().field, "scheme.kind");
    assert_eq!(parse(gd, &["job.power=true".into(), "scheme.kind=umw".into()]).unwrap_err().field, "job.power");
}

const PAGERANK: &str = "[run]\nname='p'\niterations=5\n[job]\nkind='pagerank'\n[graph]\nkind='er'\nn=100\np=0.1\n[scheme]\nkind='coded-pagerank'\nservers=4\nr=2\n";

/// PageRank configs round-trip (both schemes, file and generated graphs, every option), need K
/// ranks (no master), and mistakes name their field.
#[test]
fn pagerank_configs_round_trip_and_name_the_field() {
    for sets in [
        vec![],
        vec![
            "scheme.kind=uncoded-pagerank",
            "scheme.reduce=mod",
            "scheme.shuffle=turns",
            "scheme.multicast=unicasts",
            "job.tol=1e-9",
            "job.dangling=leak",
            "job.damping=0.9",
        ],
        vec!["graph.kind=", "graph.n=", "graph.p=", "graph.path=g.txt", "graph.directed=true", "graph.permute=true"],
        vec!["graph.kind=sbm", "graph.q=0.01", "graph.n1=30", "graph.seed=4", "graph.self_loops=true"],
        vec!["graph.kind=power-law", "graph.p=", "graph.gamma=2.5"],
        vec!["graph.kind=bipartite", "graph.p=", "graph.q=0.2"],
    ] {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let c = parse(PAGERANK, &sets).unwrap_or_else(|e| panic!("{sets:?}: {e}"));
        assert_eq!(parse(&c.to_toml(), &[]).unwrap(), c, "{sets:?}");
        assert_eq!(c.ranks(), 4);
    }
    let c = parse(PAGERANK, &[]).unwrap();
    let pr = c.pagerank().unwrap();
    assert_eq!((pr.damping, pr.tol, pr.dangling), (0.85, None, outrun_codes::Dangling::Uniform));
    let field =
        |sets: &[&str]| parse(PAGERANK, &sets.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap_err().field;
    assert_eq!(field(&["scheme.r=5"]), "scheme.r");
    assert_eq!(field(&["scheme.r=0"]), "scheme.r");
    assert_eq!(field(&["scheme.servers=0"]), "scheme.servers");
    assert_eq!(field(&["scheme.servers="]), "scheme.servers");
    assert_eq!(field(&["scheme.servers=", "scheme.workers=4"]), "scheme.workers");
    assert_eq!(field(&["scheme.servers=40", "scheme.r=12"]), "scheme.r");
    assert_eq!(field(&["scheme.reduce=random"]), "scheme.reduce");
    assert_eq!(field(&["scheme.shuffle=all"]), "scheme.shuffle");
    assert_eq!(field(&["scheme.multicast=ibcast"]), "scheme.multicast");
    assert_eq!(field(&["job.damping=1.5"]), "job.damping");
    assert_eq!(field(&["job.tol=-1"]), "job.tol");
    assert_eq!(field(&["job.dangling=drop"]), "job.dangling");
    assert_eq!(field(&["graph.p=1.5"]), "graph.p");
    assert_eq!(field(&["graph.p="]), "graph.p");
    assert_eq!(field(&["graph.q=0.1"]), "graph.q");
    assert_eq!(field(&["graph.n="]), "graph.n");
    assert_eq!(field(&["graph.n=3"]), "graph.n");
    assert_eq!(field(&["graph.path=g.txt"]), "graph.kind");
    assert_eq!(field(&["graph.kind=", "graph.path=g.txt"]), "graph.n");
    assert_eq!(field(&["graph.directed=true"]), "graph.directed");
    assert_eq!(field(&["graph.kind=power-law", "graph.p=", "graph.gamma=2"]), "graph.gamma");
    assert_eq!(field(&["graph.kind=sbm", "graph.q=0.1", "graph.n1=100"]), "graph.n1");
    assert_eq!(field(&["graph.kind=", "graph.n=", "graph.p="]), "graph");
    assert_eq!(field(&["scheme.kind=umw", "scheme.servers=", "scheme.r=", "scheme.workers=4"]), "scheme.kind");
    // a server's Map made longer, or refused where PageRank has no model of it
    parse(PAGERANK, &["stragglers.model=fixed".into(), "stragglers.workers=[1]".into()]).unwrap();
    parse(PAGERANK, &["stragglers.model=bernoulli".into(), "stragglers.p=0.1".into()]).unwrap();
    assert_eq!(field(&["stragglers.model=fixed", "stragglers.workers=[5]"]), "stragglers.workers");
    assert_eq!(field(&["stragglers.model=fail-stop", "stragglers.workers=[1]"]), "stragglers.model");
    assert_eq!(field(&["timing.compute=modelled"]), "timing.compute");
    assert_eq!(field(&["stragglers.model=shifted-exp", "stragglers.a=1e-5", "stragglers.mu=1"]), "stragglers.model");
    assert_eq!(field(&["job.kind=gd"]), "graph");
    assert_eq!(field(&["job.power=true"]), "job.power");
    // a gradient-descent config cannot run a PageRank scheme, nor set PageRank's keys
    let gd = "[run]\nname='g'\niterations=2\n[data]\nkind='linear-synthetic'\nsamples=100\nfeatures=3\n[model]\nloss='least-squares'\nlr=0.1\n[scheme]\nkind='coded-pagerank'\nservers=4\n";
    assert_eq!(parse(gd, &[]).unwrap_err().field, "scheme.kind");
    assert_eq!(
        parse(
            gd,
            &["job.damping=0.5".into(), "scheme.kind=umw".into(), "scheme.servers=".into(), "scheme.workers=4".into()]
        )
        .unwrap_err()
        .field,
        "job.damping"
    );
}

/// A held-out set needs a LIBSVM training file and the logistic loss.
#[test]
fn test_path_needs_libsvm_and_logistic() {
    let base = "[run]\nname='d'\niterations=2\n[data]\nkind='libsvm'\npath='a.libsvm'\ntest_path='b.libsvm'\n[model]\nloss='logistic'\nlr=0.1\n[scheme]\nkind='umw'\nworkers=2\n";
    let c = parse(base, &[]).unwrap();
    assert_eq!(c.data().test_path.as_deref(), Some("b.libsvm"));
    assert_eq!(parse(&c.to_toml(), &[]).unwrap(), c);
    assert_eq!(parse(base, &["model.loss=least-squares".into()]).unwrap_err().field, "data.test_path");
    // a Python model's evaluate reports a regression's held-out loss
    let python = ["model.loss=least-squares".into(), "job.kind=python".into(), "job.module=m.py".into()];
    assert_eq!(parse(base, &python).unwrap().data().test_path.as_deref(), Some("b.libsvm"));
    assert_eq!(
        parse(
            base,
            &[
                "data.kind=logistic-synthetic".into(),
                "data.path=".into(),
                "data.samples=10".into(),
                "data.features=2".into()
            ]
        )
        .unwrap_err()
        .field,
        "data.test_path"
    );
}

#[test]
fn upload_mode_defaults_to_eager_and_replaces_cancel_late() {
    assert_eq!(parse_with(&[]).unwrap().engine.upload, Upload::Eager);
    let g = parse_with(&["engine.upload=granted"]).unwrap();
    assert_eq!(g.engine.upload, Upload::Granted);
    assert_eq!(parse(&g.to_toml(), &[]).unwrap(), g, "round trip");
    let e = parse_with(&["engine.upload=lazy"]).unwrap_err();
    assert!(e.to_string().contains("engine") && e.to_string().contains("granted"), "{e}");
    let e = parse_with(&["network.cancel_late=true"]).unwrap_err();
    assert_eq!(e.field, "network.cancel_late");
    assert!(e.message.contains("engine.upload = \"granted\""), "{e}");
    // what older run directories' config.toml say: today's default
    assert_eq!(parse_with(&["network.cancel_late=false"]).unwrap().engine.upload, Upload::Eager);
}

#[test]
fn a_python_job_names_its_module_and_keeps_its_options() {
    let text =
        format!("{BASE}[job]\nkind = \"python\"\nmodule = \"m.py\"\n[job.options]\nhidden = [8]\nname = \"x\"\n");
    let c = parse_in(&text, std::path::Path::new("/tmp"), &[]).unwrap();
    let JobConfig::Gd(g) = &c.job else { panic!("a gradient-descent job") };
    let py = g.python.as_ref().unwrap();
    assert_eq!(py.module, "/tmp/m.py", "the module is relative to the config");
    assert_eq!(py.options["hidden"], toml::Value::Array(vec![toml::Value::Integer(8)]));
    assert_eq!(c.job.name(), "python");
    assert_eq!(parse(&c.to_toml(), &[]).unwrap(), c, "round trip through the resolved TOML");
    let python = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        parse(&text, &sets).unwrap_err()
    };
    assert_eq!(python(&["job.module="]).field, "job.module");
    assert_eq!(python(&["model.hidden=[4]"]).field, "model.hidden");
    assert_eq!(python(&["model.init=\"he\""]).field, "model.init");
    let e = python(&["scheme.kind=codedfedl", "scheme.parity=4", "scheme.workers=6", "scheme.s="]);
    assert_eq!(e.field, "scheme.kind", "{e}");
    // the module's keys belong to the python job only
    assert_eq!(field_of(&["job.module=\"m.py\""]), "job.module");
    assert_eq!(field_of(&["job.options.k=1"]), "job.options");
}

#[test]
fn optimizer_keys_belong_to_their_optimizer_and_round_trip() {
    let adam = parse_with(&["model.optimizer=adam", "model.beta2=0.99"]).unwrap();
    assert_eq!(adam.model().optimizer, OptimizerKind::Adam);
    assert_eq!(adam.model().adam(), (0.9, 0.99, 1e-8));
    assert_eq!(adam.model().decoupled_decay(), 0.0);
    let adamw = parse_with(&["model.optimizer=adamw"]).unwrap();
    assert_eq!(adamw.model().decoupled_decay(), 0.01);
    // the resolved config (a run directory's config.toml) reads back the same; sgd adds no key
    assert_eq!(parse(&adam.to_toml(), &[]).unwrap(), adam);
    assert!(!parse_with(&[]).unwrap().to_toml().contains("optimizer"));
    for (sets, field, says) in [
        (&["model.beta1=0.8"][..], "model.beta1", "is for model.optimizer = \"adam\" or \"adamw\", not \"sgd\""),
        (&["model.optimizer=adam", "model.momentum=0.9"], "model.momentum", "adam keeps its own moments"),
        (
            &["model.optimizer=adamw", "model.momentum=0.9", "model.nesterov=true"],
            "model.nesterov",
            "is for model.optimizer = \"sgd\"",
        ),
        (&["model.optimizer=adam", "model.beta1=1"], "model.beta1", "= 1: must be in [0, 1)"),
        (&["model.optimizer=adam", "model.eps=0"], "model.eps", "must be positive"),
        (&["model.optimizer=adam", "model.weight_decay=0.1"], "model.weight_decay", "Adam's weight decay is model.l2"),
        (&["model.optimizer=adamw", "model.weight_decay=-1"], "model.weight_decay", "must be at least 0"),
        (&["model.optimizer=rmsprop"], "model.optimizer", ""),
    ] {
        let e = parse_with(sets).unwrap_err();
        assert_eq!(e.field, field, "{sets:?}: {e}");
        assert!(e.to_string().contains(says), "{sets:?}: {e}");
    }
}

#[test]
fn csv_layout_keys_name_the_field_and_round_trip() {
    let csv = ["data.kind=csv", "data.path=\"d.csv\"", "data.samples=", "data.features="];
    let with = |more: &[&str]| parse_with(&csv.iter().chain(more).copied().collect::<Vec<_>>());
    let c = with(&[
        "data.delimiter=\"tab\"",
        "data.label_column=\"last\"",
        "data.labels=\"auto\"",
        "model.loss=\"logistic\"",
    ])
    .unwrap();
    assert_eq!(c.data().csv_delimiter(), '\t');
    assert_eq!(c.data().label_column, Some(LabelColumn::Name("last".into())));
    assert_eq!(parse(&c.to_toml(), &[]).unwrap(), c);
    assert_eq!(with(&["data.label_column=3"]).unwrap().data().label_column, Some(LabelColumn::Index(3)));
    for (more, field, says) in [
        (&["data.delimiter=\";;\""][..], "data.delimiter", "one character"),
        (&["data.delimiter=\"#\""], "data.delimiter", "not a quote, `#` or a line break"),
        (&["data.label_column=-1"], "data.label_column", "a 0-based column index"),
        (&["data.label_column=\" \""], "data.label_column", "is empty"),
        (&["data.labels=\"auto\""], "data.labels", "needs class labels"),
        (&["data.missing=\"median\""], "data.missing", "unknown variant"),
    ] {
        let e = with(more).unwrap_err();
        assert_eq!(e.field, field, "{more:?}: {e}");
        assert!(e.to_string().contains(says), "{more:?}: {e}");
    }
    assert_eq!(with(&["data.missing=\"mean\""]).unwrap().data().missing, crate::Missing::Mean);
    // the CSV keys on another kind of data
    let e = parse_with(&["data.missing=\"zero\""]).unwrap_err();
    assert_eq!(e.field, "data.missing", "{e}");
    let e = parse_with(&["data.delimiter=\";\""]).unwrap_err();
    assert_eq!(
        (e.field.as_str(), e.to_string().contains("is for data.kind = \"csv\"")),
        ("data.delimiter", true),
        "{e}"
    );
}

#[test]
fn index_base_is_for_libsvm_and_zero_or_one() {
    let libsvm =
        ["data.kind=libsvm", "data.path=\"d.svm\"", "data.samples=", "data.features=", "model.loss=\"logistic\""];
    let with = |more: &[&str]| parse_with(&libsvm.iter().chain(more).copied().collect::<Vec<_>>());
    assert_eq!(with(&[]).unwrap().data().libsvm_index_base(), 1);
    let c = with(&["data.index_base=0"]).unwrap();
    assert_eq!(c.data().libsvm_index_base(), 0);
    assert_eq!(parse(&c.to_toml(), &[]).unwrap(), c);
    let e = with(&["data.index_base=2"]).unwrap_err();
    assert_eq!(e.field, "data.index_base");
    assert!(e.to_string().contains("1 (the first feature is 1:, the default) or 0"), "{e}");
    let e = parse_with(&["data.index_base=0"]).unwrap_err();
    assert_eq!(e.field, "data.index_base");
    assert!(e.to_string().contains("is for data.kind = \"libsvm\""), "{e}");
}

#[test]
fn test_fraction_is_a_fraction_and_the_only_held_out_set() {
    let logistic = ["model.loss=\"logistic\"", "data.kind=logistic-synthetic"];
    let with = |more: &[&str]| parse_with(&logistic.iter().chain(more).copied().collect::<Vec<_>>());
    let c = with(&["data.test_fraction=0.2"]).unwrap();
    assert_eq!(c.data().test_fraction, Some(0.2));
    assert_eq!(parse(&c.to_toml(), &[]).unwrap(), c);
    for (more, says) in [
        (&["data.test_fraction=0"][..], "a fraction of the rows in (0, 1)"),
        (&["data.test_fraction=1.5"], "a fraction of the rows in (0, 1)"),
        (&["data.test_fraction=0.2", "data.kind=libsvm", "data.path=\"a\"", "data.test_path=\"b\""], "keep one"),
    ] {
        let e = with(more).unwrap_err();
        assert_eq!(e.field, "data.test_fraction", "{more:?}: {e}");
        assert!(e.to_string().contains(says), "{more:?}: {e}");
    }
    let e = parse_with(&["data.test_fraction=0.2"]).unwrap_err();
    assert_eq!(e.field, "data.test_fraction");
    assert!(e.to_string().contains("needs class labels"), "{e}");
}

/// `data.order = "shards"` takes its count from `data.shards`, which only it uses; the count is
/// at least 1 and at most the rows a synthetic set has.
#[test]
fn shards_need_a_count_and_only_that_order_takes_one() {
    let logistic = ["model.loss=\"logistic\"", "data.kind=logistic-synthetic"];
    let with = |more: &[&str]| parse_with(&logistic.iter().chain(more).copied().collect::<Vec<_>>());
    let c = with(&["data.order=\"shards\"", "data.shards=4"]).unwrap();
    assert_eq!((c.data().order, c.data().shards), (crate::DataOrder::Shards, Some(4)));
    assert_eq!(parse(&c.to_toml(), &[]).unwrap(), c);
    let samples = c.data().samples.unwrap();
    let too_many = format!("data.shards={}", samples + 1);
    for (more, field, says) in [
        (&["data.order=\"shards\""][..], "data.order", "needs data.shards"),
        (&["data.order=\"shards\"", "data.shards=0"], "data.shards", "= 0: at least 1"),
        (&["data.order=\"shards\"", &too_many], "data.shards", "more shards than data.samples"),
        (&["data.order=\"by-label\"", "data.shards=4"], "data.shards", "is for data.order = \"shards\""),
        (&["data.shards=4"], "data.shards", "is for data.order = \"shards\""),
    ] {
        let e = with(more).unwrap_err();
        assert_eq!(e.field, field, "{more:?}: {e}");
        assert!(e.to_string().contains(says), "{more:?}: {e}");
    }
}

/// A Python module learns the classes from [model]: init's options get model.classes when they
/// do not say it, and a different value is refused before any rank imports the module.
#[test]
fn a_python_module_gets_model_classes_once() {
    let text = format!("{BASE}[job]\nkind = \"python\"\nmodule = \"m.py\"\n[job.options]\nhidden = [8]\n");
    let softmax = ["model.loss=\"softmax\"", "model.classes=10", "data.kind=softmax-synthetic"];
    let sets = |more: &[&str]| softmax.iter().chain(more).map(|s| s.to_string()).collect::<Vec<_>>();
    let c = parse(&text, &sets(&[])).unwrap();
    let opts = &c.gd().python.as_ref().unwrap().options;
    assert_eq!(opts.get("classes").and_then(|v| v.as_integer()), Some(10));
    assert_eq!(parse(&c.to_toml(), &[]).unwrap(), c);
    assert!(parse(&text, &sets(&["job.options.classes=10"])).is_ok());
    let e = parse(&text, &sets(&["job.options.classes=5"])).unwrap_err();
    assert_eq!(e.field, "job.options.classes");
    assert!(e.to_string().contains("= 5, but model.classes = 10"), "{e}");
    // real labels: nothing to give
    let c = parse(&text, &[]).unwrap();
    assert!(c.gd().python.as_ref().unwrap().options.get("classes").is_none());
}

#[test]
fn a_latency_is_one_positive_number_for_every_pattern_but_the_library_collective() {
    let c = parse_with(&["links.model=latency", "links.latency=0.004"]).unwrap();
    assert_eq!(c.links, LinksConfig::Latency(crate::LatencyConfig { latency: Some(0.004) }));
    // a ring's messages pay it too, unlike a worker's link faults
    assert!(parse_with(&["links.model=latency", "links.latency=0.004", "scheme.kind=rar", "scheme.s="]).is_ok());
    let e = parse_with(&["links.model=delay", "links.tau_up=0.1", "scheme.kind=rar", "scheme.s="]).unwrap_err();
    assert_eq!(e.field, "links.model");
    for (sets, field, want) in [
        (&["links.model=latency"][..], "links.latency", "missing"),
        (&["links.model=latency", "links.latency=0"], "links.latency", "= 0: a latency in (0, 3600] seconds"),
        (&["links.model=latency", "links.latency=-1"], "links.latency", "= -1"),
        (&["links.model=latency", "links.latency=0.1", "links.p=0.2"], "links.p", ""),
        (
            &["links.model=latency", "links.latency=0.1", "scheme.kind=allreduce", "scheme.s="],
            "links.model",
            "the MPI library's collective",
        ),
    ] {
        let e = parse_with(sets).unwrap_err();
        assert_eq!(e.field, field, "{sets:?}: {e}");
        assert!(e.to_string().contains(want), "{sets:?}: {e}");
    }
}

/// A file that exists is named plainly (no `..`: one file, one name, whichever way the config
/// reached it — the problem `--resume` matches and `outrun report` groups by); one that does not
/// keeps the joined path, which the check then names.
#[test]
fn paths_of_files_that_exist_are_named_plainly() {
    let root = std::env::temp_dir().join(format!("outrun-config-plain-{}", std::process::id()));
    std::fs::create_dir_all(root.join("configs")).unwrap();
    std::fs::write(root.join("m.py"), "").unwrap();
    let text = format!("{BASE}[job]\nkind = \"python\"\nmodule = \"../m.py\"\n");
    let c = parse_in(&text, &root.join("configs"), &[]).unwrap();
    let JobConfig::Gd(g) = &c.job else { panic!("a gradient-descent job") };
    let want = std::fs::canonicalize(root.join("m.py")).unwrap();
    assert_eq!(g.python.as_ref().unwrap().module, want.display().to_string());
    let text = format!("{BASE}[job]\nkind = \"python\"\nmodule = \"../absent.py\"\n");
    let c = parse_in(&text, &root.join("configs"), &[]).unwrap();
    let JobConfig::Gd(g) = &c.job else { panic!("a gradient-descent job") };
    assert!(g.python.as_ref().unwrap().module.ends_with("configs/../absent.py"));
    std::fs::remove_dir_all(&root).unwrap();
}
