//! The driver core against a fake job (`outrun_testkit::FakeJob`): what both drivers do with a
//! machine's outputs — computing a rank's parts with its faults, deciding when they may be used,
//! applying a delivered total and choosing the machine's next input, the prelude's sum, the
//! link delays — without MPI, a clock, data or a model.

use outrun_driver::{Core, Progress};
use outrun_proto::{Delivered, Frame, Header, Input, Kind, Len};
use outrun_testkit::{Cfg, FakeJob};

fn info() -> Delivered {
    Delivered { used: vec![1, 2, 3], residual: 0.0, exact: true, coverage: 1.0, late_total: 0, rejected: vec![] }
}

fn start_of<P: std::fmt::Debug>(input: &Input<P>) -> Option<u64> {
    match input {
        Input::Start { t, .. } => Some(*t),
        _ => None,
    }
}

#[test]
fn delivered_totals_are_applied_and_start_the_next_iteration_until_the_last() {
    let plan = Cfg::linear("core", 30, 2, 3).set("run.iterations", 2).plan();
    let mut core = Core::of(&plan, 0, Box::new(FakeJob::new(3)));
    assert_eq!(start_of(&core.start::<Frame>()), Some(0));
    let next = core.deliver(0, Frame::from_vec(vec![1.0, 2.0, 3.0]), info(), 0.5);
    assert_eq!(start_of(&next), Some(1));
    // the next model is the state the job applied
    let Input::Start { model, .. } = next else { unreachable!() };
    assert_eq!(model.as_slice(), &[1.0, 2.0, 3.0]);
    assert_eq!(core.state(), Some(&[1.0, 2.0, 3.0][..]));
    let last = core.deliver(1, Frame::from_vec(vec![4.0; 3]), info(), 1.0);
    assert!(matches!(last, Input::Finish { failure: None }), "{last:?}");
}

#[test]
fn a_job_that_cannot_apply_ends_the_run_with_its_line() {
    let plan = Cfg::linear("core", 30, 2, 3).plan();
    let job = FakeJob { fail_at: Some(0), ..FakeJob::new(2) };
    let mut core = Core::of(&plan, 0, Box::new(job));
    let next = core.deliver(0, Frame::from_vec(vec![1.0; 2]), info(), 0.1);
    let Input::Finish { failure: Some(why) } = next else { panic!("{next:?}") };
    assert_eq!(why, "iteration 0: the fake job diverged");
    // no book on this rank: another rank (the logging one) reports it
    assert!(core.quiet_failure);
}

#[test]
fn a_workers_faults_reach_its_parts_and_only_in_their_iterations() {
    let cfg = Cfg::linear("core", 30, 2, 3)
        .set("model.loss", "logistic")
        .set("data.kind", "logistic-synthetic")
        .set("faults.kind", "label-flip")
        .set("faults.workers", vec![2]);
    let plan = cfg.plan();
    // worker 2 computes on flipped labels in every iteration, worker 1 never
    let mut core = Core::of(&plan, 2, Box::new(FakeJob::new(2)));
    let parts = core.compute::<Frame>(0, &Frame::from_vec(vec![0.0; 2]), None).unwrap();
    assert_eq!(parts[0].as_slice(), &[-2.0, -2.0], "rank 2's part 0 of iteration 0, flipped");
    let mut clean = Core::of(&plan, 1, Box::new(FakeJob::new(2)));
    let parts = clean.compute::<Frame>(3, &Frame::from_vec(vec![0.0; 2]), None).unwrap();
    assert_eq!(parts[0].as_slice(), &[4.0, 4.0]);
    // a value fault corrupts the computed values instead
    let plan = Cfg::linear("core", 30, 2, 3).set("faults.kind", "sign-flip").set("faults.workers", vec![1]).plan();
    let mut core = Core::of(&plan, 1, Box::new(FakeJob::new(2)));
    let parts = core.compute::<Frame>(1, &Frame::from_vec(vec![0.0; 2]), None).unwrap();
    assert!(parts[0].as_slice().iter().all(|&v| v < 0.0), "sign-flipped: {:?}", parts[0]);
    // lengths only: nothing to corrupt, the count of parts is the rank's
    let lens = core.compute::<Len>(1, &Len(2), None).unwrap();
    assert_eq!(lens.len(), 1);
}

#[test]
fn modelled_compute_times_scale_with_the_load_and_flag_an_overrun() {
    let plan = Cfg::linear("core", 300, 2, 3).set("timing.compute", "modelled").set("timing.a", 1e-3).plan();
    let mut core = Core::of(&plan, 1, Box::new(FakeJob::new(2)));
    let load = plan.nodes[1].load() as f64;
    // simulated: the model's time, from the start
    let timed = core.timing(0, None, 10.0, 10.0, None);
    assert!((timed.ready_at - (10.0 + 1e-3 * load)).abs() < 1e-12, "{}", timed.ready_at);
    assert_eq!(timed.record.overrun, Some(false));
    // measured longer than the model: used when the work ended, and flagged
    let timed = core.timing(1, None, 10.0, 20.0, Some(10.0));
    assert_eq!(timed.ready_at, 20.0);
    assert_eq!(timed.record.overrun, Some(true));
    // half the points selected: half the time
    let timed = core.timing(2, Some(plan.nodes[1].load() / 2), 0.0, 0.0, None);
    assert!((timed.ready_at - 1e-3 * (plan.nodes[1].load() / 2) as f64).abs() < 1e-12);
}

#[test]
fn the_preludes_sum_reaches_the_roots_job_and_its_seconds_the_book() {
    let plan = Cfg::linear("core", 30, 2, 3).plan();
    let mut root = Core::of(&plan, 0, Box::new(FakeJob::new(2)));
    let Input::Contribution { value } = root.contribute::<Frame>().unwrap() else { panic!() };
    assert_eq!(value.as_slice(), &[0.0, 0.0], "the root contributes zeros");
    let mut worker = Core::of(&plan, 2, Box::new(FakeJob::new(2)));
    let Input::Contribution { value } = worker.contribute::<Frame>().unwrap() else { panic!() };
    assert_eq!(value.as_slice(), &[2.0, 2.0]);
    assert_eq!(root.prelude_s(), None);
    root.gathered(Frame::from_vec(vec![6.0, 6.0]), 0.25);
    assert_eq!(root.prelude_s(), Some(0.25));
    // lengths only: the contribution's length, and nothing to hand over
    let Input::Contribution { value } = worker.contribute::<Len>().unwrap() else { panic!() };
    assert_eq!(value, Len(2));
}

#[test]
fn links_delay_only_the_messages_on_a_ranks_own_links() {
    let plan = Cfg::linear("core", 30, 2, 3).plan();
    let core = Core::of(&plan, 1, Box::new(FakeJob::new(2)));
    let head = Header::new(Kind::Result, 0);
    assert_eq!(core.link_delay(0, &head), 0.0, "no [links]: no delay");
    let plan = Cfg::linear("core", 30, 2, 3)
        .set("links.model", "delay")
        .set("links.tau_up", 0.5)
        .set("links.tau_down", 0.25)
        .set("links.p", 0.0)
        .plan();
    let worker = Core::of(&plan, 1, Box::new(FakeJob::new(2)));
    assert_eq!(worker.link_delay(0, &head), 0.5, "up to its parent");
    assert_eq!(worker.link_delay(2, &head), 0.0, "no link to a sibling");
    let master = Core::of(&plan, 0, Box::new(FakeJob::new(2)));
    assert_eq!(master.link_delay(3, &Header::new(Kind::Model, 0)), 0.25, "down to a child");
}

#[test]
fn progress_is_told_the_run_and_each_iteration() {
    #[derive(Default)]
    struct Seen {
        begun: Option<(u64, u64)>,
        ticks: Vec<u64>,
    }
    impl Progress for Seen {
        fn begin(&mut self, first: u64, iterations: u64) {
            self.begun = Some((first, iterations));
        }
        fn tick(&mut self, t: u64, _wall_s: f64, _loss: f64) {
            self.ticks.push(t);
        }
    }
    let dir = std::env::temp_dir().join(format!("outrun-core-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plan = Cfg::linear("core", 30, 2, 3).set("run.iterations", 2).plan();
    let job = FakeJob::new(2);
    let run = outrun_driver::run_info(&plan, &job, &dir, "modelled");
    let book = outrun_runlog::Book::new(&run, 0.0).unwrap();
    let mut seen = Seen::default();
    {
        let mut core = Core::of(&plan, 0, Box::new(job)).with_book(book, run).with_progress(&mut seen);
        core.deliver(0, Frame::from_vec(vec![1.0; 2]), info(), 0.1);
        core.deliver(1, Frame::from_vec(vec![2.0; 2]), info(), 0.2);
        let summary = core.finish(0.0, 0, 0, &Default::default()).unwrap().expect("the logging rank's summary");
        assert_eq!(summary.iterations, 2);
    }
    assert_eq!((seen.begun, seen.ticks), (Some((0, 2)), vec![0, 1]));
    assert_eq!(std::fs::read_to_string(dir.join("state.txt")).unwrap(), "2e0\n2e0\n");
    std::fs::remove_dir_all(&dir).unwrap();
}
