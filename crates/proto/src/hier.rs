//! The hierarchical node (thesis ch. 6): a master, n_h helpers and n_e clients, where a client
//! has a link to every helper — the first pattern in which a node has several parents.
//!
//! Every iteration t:
//! 1. the master sends `[Model, t]` to the helpers; helper h relays it to its clients (client c
//!    hears θ from helper (c − 1) mod n_h + 1: the chapter leaves the downlink open, and this one
//!    spreads it evenly);
//! 2. a client computes, encodes one slice per helper (`roles::hier::slice`) and sends each helper its
//!    slice as `[Result, t]`;
//! 3. a helper discards the slices whose link failed in t (`Links::failed_helpers`: a message on
//!    a failed link is lost, and the helper knows it at once — an emulation shortcut) and, once
//!    every client is accounted for, sends `[Report, t]` with the clients that arrived; the
//!    real timeout: a slice that has not come within half of `run.deadline`
//!    (`budget::wait_budget`, as a tree's middle layer) counts as a failed link, so a slow link
//!    is tolerated up to s, and a stopped client (every link failed) is named by the master;
//! 4. the master, with every report, has the failure table; it fails the run in one line if a
//!    client lost more than s links, else sends each helper `[Instruct, t]` with the client sets
//!    whose slices it sums (`Hier::uploads`);
//! 5. each helper with something to upload sends its sums as one `[Result, t]`; the master
//!    decodes (`roles::hier::decode`), delivers, logs the failure table, C_EH, C_HM and the bytes.
//!
//! Stop (or abort) flows master → helpers → clients; a client says goodbye to every helper (MPI
//! keeps each pair's messages in order, so a goodbye follows everything the client sent), a
//! helper to the master once every client has. Results of an earlier iteration are counted and
//! discarded as late; the master fails the run at `run.deadline` naming the helpers it waits for.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use crate::roles::{hier, Combination, Src, Term, Vector};
use outrun_codes::hier::{FailureTable, HierError};
use outrun_plan::budget::{patience, shutdown_grace, wait_budget};
use outrun_plan::{Hier, Uploads};
use outrun_plan::{Links, Pattern, Plan};
use outrun_runlog::event::{Ending, Event, HierNote, Iter, Shutdown};

use crate::hist::Histogram;
use crate::machine::{Clock, Contacts, Delivered, Failure, Input, Machine, Outcome, Output};
use crate::wire::{Header, Kind, Meta, Msg};

/// Timers: the master's wait for an iteration (a helper's, for its clients' slices), the
/// shutdown grace, a node's patience with a silent parent.
const WAIT: u64 = 1;
const GRACE: u64 = 2;
const SILENCE: u64 = 3;

/// What this rank is.
enum Role<P> {
    Master(Master<P>),
    Helper(Helper<P>),
    Client(Client),
}

/// The master's iteration: reports, instructions, uploads.
struct Master<P> {
    /// Per helper, the clients (0-based) whose slices arrived.
    reports: Vec<Option<Vec<usize>>>,
    table: FailureTable,
    uploads: Uploads,
    /// Per helper, its upload.
    got: Vec<Option<P>>,
    control_bytes: u64,
    upload_bytes: u64,
    upload_values: usize,
    /// Helpers that said goodbye.
    byes: Vec<bool>,
}

impl<P> Master<P> {
    fn new(helpers: usize) -> Self {
        Master {
            reports: vec![None; helpers],
            table: vec![],
            uploads: vec![],
            got: (0..helpers).map(|_| None).collect(),
            control_bytes: 0,
            upload_bytes: 0,
            upload_values: 0,
            byes: vec![false; helpers],
        }
    }
}

/// A helper's iteration: the slices received, by client.
struct Helper<P> {
    /// Helper index (0-based; its rank is index + 1).
    index: usize,
    /// The clients it relays models to (ranks: its children in the plan).
    relay: Vec<usize>,
    /// Slices of the current and later iterations: (t, client) → slice (None: lost).
    slices: BTreeMap<(u64, usize), Option<P>>,
    /// The report of the current iteration was sent.
    reported: bool,
    /// Clients that said goodbye.
    byes: Vec<bool>,
}

/// A client: the helper it hears from.
struct Client {
    /// Client index (0-based; worker index + 1).
    index: usize,
    /// The helper rank that relays its models (its parent in the plan).
    parent: usize,
}

/// One rank of the hierarchical pattern.
pub struct HierNode<P: Vector> {
    rank: usize,
    role: Role<P>,
    hier: Hier,
    links: Links,
    len: usize,
    deadline: f64,
    /// Patience with silence from above ([`patience`]: a shutdown grace more for every node but
    /// the first helper, so that a silent master is named by one node; a silent helper is named
    /// by the master at `run.deadline`, long before).
    silence: f64,
    cur: Option<u64>,
    record: Option<Iter>,
    running: bool,
    failure: Option<Failure>,
    abort: bool,
    done: bool,
    late: u64,
    up_sent: u64,
    due: [Option<f64>; 3],
    latency: Histogram,
    dropped: Vec<(u32, String)>,
    silent: Vec<(u32, Option<u64>)>,
    out: VecDeque<Output<P>>,
}

impl<P: Vector> HierNode<P> {
    /// Rank `rank` of `plan`'s hierarchical pattern, for payloads of `len` values.
    pub fn new(plan: &Plan, rank: usize, len: usize) -> Self {
        let Pattern::Hier { clients, helpers } = plan.pattern else { panic!("a hierarchical plan") };
        let hier = plan.hier().cloned().expect("a hierarchical plan has its scheme");
        let role = if rank == 0 {
            Role::Master(Master::new(helpers))
        } else if rank <= helpers {
            Role::Helper(Helper {
                index: rank - 1,
                relay: plan.nodes[rank].children.clone(),
                slices: BTreeMap::new(),
                reported: false,
                byes: vec![false; clients],
            })
        } else {
            let parent = plan.nodes[rank].parent.expect("a client's model comes through a helper");
            Role::Client(Client { index: rank - helpers - 1, parent })
        };
        HierNode {
            rank,
            role,
            hier,
            links: plan.links.clone(),
            len,
            deadline: plan.run.deadline,
            silence: patience(plan.run.deadline, 2, rank == 1),
            cur: None,
            record: None,
            running: true,
            failure: None,
            abort: false,
            done: false,
            late: 0,
            up_sent: 0,
            due: [None; 3],
            latency: Histogram::default(),
            dropped: vec![],
            silent: vec![],
            out: VecDeque::new(),
        }
    }

    fn helper_ranks(&self) -> Vec<usize> {
        (1..=self.hier.helpers).collect()
    }

    fn arm(&mut self, id: u64, at: f64) {
        self.due[id as usize - 1] = Some(at);
        self.out.push_back(Output::Timer { id, at });
    }

    fn send(&mut self, to: Vec<usize>, head: Header, body: Option<Arc<P>>) {
        self.out.push_back(Output::Send { to, msg: Msg { head, body }, track: None });
    }

    fn log(&mut self, ev: Event) {
        self.out.push_back(Output::Log(ev));
    }

    fn flush_record(&mut self) {
        if let Some(r) = self.record.take() {
            self.log(Event::iter(r));
        }
    }

    // ---- the master ----

    fn master(&mut self) -> &mut Master<P> {
        match &mut self.role {
            Role::Master(m) => m,
            _ => unreachable!("the master's step"),
        }
    }

    fn start(&mut self, now: f64, t: u64, model: Arc<P>) {
        self.flush_record();
        self.cur = Some(t);
        let n = self.hier.helpers;
        *self.master() = Master::new(n);
        self.record = Some(Iter { t, start: Some(now), sent: Some(now), ..Iter::default() });
        let head = Header { sent_at: now, ..Header::new(Kind::Model, t) };
        self.send(self.helper_ranks(), head, Some(model));
        self.arm(WAIT, now + self.deadline);
    }

    fn on_report(&mut self, now: f64, helper: usize, head: Header, bytes: u64) {
        let clients = self.hier.clients;
        let Meta::Clients(arrived) = head.meta else {
            return self.log(Event::warn(now, "a report without its clients"));
        };
        let m = self.master();
        m.control_bytes += bytes;
        m.reports[helper] = Some(arrived.iter().map(|&c| c as usize).collect());
        if m.reports.iter().any(Option::is_none) {
            return;
        }
        let mut table: FailureTable = vec![vec![]; clients];
        for (h, r) in m.reports.iter().enumerate() {
            let r = r.as_ref().expect("checked");
            (0..clients).filter(|c| !r.contains(c)).for_each(|c| table[c].push(h));
        }
        let t = head.t;
        let uploads = match self.hier.uploads(&table) {
            Ok(u) => u,
            Err(HierError::TooMany { client, helpers, s }) => {
                let drawn = self.links.failed_helpers(client + 1, self.hier.helpers, t);
                let silent: Vec<usize> = helpers.iter().copied().filter(|h| !drawn.contains(h)).collect();
                let list = |hs: &[usize]| hs.iter().map(|h| (h + 1).to_string()).collect::<Vec<_>>().join(", ");
                let why = if silent.is_empty() {
                    format!(
                    "iteration {t}: client {} (rank {}) lost its links to helpers {} (helper h is rank h): more than scheme.s = {s} failed links, so the master cannot recover the gradient; raise scheme.s or lower links.per_client",
                    client + 1,
                    self.hier.helpers + 1 + client,
                    list(&helpers)
                    )
                } else {
                    let links = if drawn.is_empty() {
                        String::new()
                    } else {
                        format!(" and links.model failed its links to helpers {}", list(&drawn))
                    };
                    format!(
                        "iteration {t}: no slice of client {} (rank {}) reached helpers {} within their wait of {} s{links} (helper h is rank h): the client is slow, stopped or gone, and more than scheme.s = {s} of its links failed, so the master cannot recover the gradient",
                        client + 1,
                        self.hier.helpers + 1 + client,
                        list(&silent),
                        wait_budget(self.deadline, 1, 1)
                    )
                };
                let missing = vec![(self.hier.helpers + 1 + client) as u32];
                return self.start_drain(now, Some(Failure::Iteration { iteration: t, missing, message: why }));
            }
            Err(e) => {
                let message = format!("iteration {t}: {e}");
                return self.start_drain(now, Some(Failure::Iteration { iteration: t, missing: vec![], message }));
            }
        };
        for (h, sets) in uploads.iter().enumerate() {
            let meta = Meta::Sums(sets.iter().map(|s| s.iter().map(|&c| c as u32).collect()).collect());
            let head = Header { meta, ..Header::new(Kind::Instruct, t) };
            let bytes = crate::wire::frame_bytes(&head, 0) as u64;
            self.master().control_bytes += bytes;
            self.send(vec![h + 1], head, None);
        }
        let m = self.master();
        m.table = table;
        m.uploads = uploads;
        self.try_decode(now);
    }

    fn on_upload(&mut self, now: f64, helper: usize, body: Option<Arc<P>>, bytes: u64) {
        let m = self.master();
        if m.uploads.get(helper).is_none_or(Vec::is_empty) || m.got[helper].is_some() {
            self.late += 1;
            return;
        }
        let body = crate::wire::owned_body(body, 0);
        m.upload_bytes += bytes;
        m.upload_values += body.len();
        m.got[helper] = Some(body);
        self.try_decode(now);
    }

    fn try_decode(&mut self, now: f64) {
        let Some(t) = self.cur else { return };
        let len = self.len;
        let m = self.master();
        if m.uploads.is_empty() || m.uploads.iter().zip(&m.got).any(|(u, g)| !u.is_empty() && g.is_none()) {
            return;
        }
        let arrivals: Vec<P> = m.got.iter_mut().filter_map(Option::take).collect();
        let (table, uploads) = (std::mem::take(&mut m.table), std::mem::take(&mut m.uploads));
        let (control, upload_bytes, values) = (m.control_bytes, m.upload_bytes, m.upload_values);
        let comb = match hier::decode(&self.hier, &table, &uploads, len) {
            Ok(c) => c,
            Err(e) => {
                let message = format!("iteration {t}: {e}: the result would be inexact");
                return self.start_drain(now, Some(Failure::Iteration { iteration: t, missing: vec![], message }));
            }
        };
        let total = Combination::evaluate(len, &comb.terms, &[], &arrivals);
        self.due[WAIT as usize - 1] = None;
        let padded = (self.hier.k * self.hier.part(len)) as f64;
        if let Some(r) = self.record.as_mut() {
            r.collect.exact = Some(true);
            r.collect.end = Some(now);
            r.collect.result_bytes = Some(upload_bytes);
            r.collect.recv_bytes = Some(upload_bytes + control);
            r.collect.residual = Some(comb.residual);
            r.collect.cond = (comb.cond > 0.0).then_some(comb.cond);
            r.notes.hier = Some(HierNote {
                failed: table.iter().map(|f| f.iter().map(|h| h + 1).collect()).collect(),
                c_eh: self.hier.c_eh(),
                c_hm: values as f64 / padded,
                sums: uploads.iter().map(Vec::len).sum(),
                upload_bytes,
                control_bytes: control,
            });
        }
        self.flush_record();
        let info = Delivered {
            used: (1..=self.hier.clients).collect(),
            residual: comb.residual,
            exact: true,
            coverage: 1.0,
            late_total: self.late,
            rejected: vec![],
        };
        self.out.push_back(Output::Deliver { t, total, info });
    }

    /// The master's wait ran out: name what it waits for.
    fn expired(&mut self, now: f64) {
        let Some(t) = self.cur else { return };
        let deadline = self.deadline;
        let m = self.master();
        let list = |who: Vec<usize>| who.iter().map(|h| (h + 1).to_string()).collect::<Vec<_>>().join(", ");
        let (who, what): (Vec<usize>, _) = if m.reports.iter().any(Option::is_none) {
            ((0..m.reports.len()).filter(|&h| m.reports[h].is_none()).collect(), "no report from helpers")
        } else {
            (
                (0..m.got.len()).filter(|&h| !m.uploads[h].is_empty() && m.got[h].is_none()).collect(),
                "no upload from helpers",
            )
        };
        let missing = who.iter().map(|&h| (h + 1) as u32).collect();
        let tail = if what.starts_with("no report") { " (each waits for every client's slice)" } else { "" };
        let message =
            format!("iteration {t} did not complete within run.deadline = {deadline} s: {what} {}{tail}", list(who));
        self.start_drain(now, Some(Failure::Iteration { iteration: t, missing, message }));
    }

    // ---- a helper ----

    fn helper(&mut self) -> &mut Helper<P> {
        match &mut self.role {
            Role::Helper(h) => h,
            _ => unreachable!("a helper's step"),
        }
    }

    fn on_helper_model(&mut self, now: f64, msg: Msg<P>) {
        let t = msg.head.t;
        self.flush_record();
        self.cur = Some(t);
        self.record = Some(Iter { t, model: Some(now), ..Iter::default() });
        let h = self.helper();
        h.reported = false;
        h.slices.retain(|&(u, _), _| u >= t);
        let relay = h.relay.clone();
        if !relay.is_empty() {
            self.out.push_back(Output::Send { to: relay, msg, track: None });
        }
        self.arm(WAIT, now + wait_budget(self.deadline, 1, 1));
        self.try_report(t);
    }

    fn on_slice(&mut self, client: usize, t: u64, body: Option<Arc<P>>) {
        let lost = self.links.failed_helpers(client + 1, self.hier.helpers, t).contains(&self.helper().index);
        let cur = self.cur;
        let h = self.helper();
        if cur.is_some_and(|c| t < c || (t == c && h.reported)) || h.slices.contains_key(&(t, client)) {
            self.late += 1;
            return;
        }
        h.slices.insert((t, client), (!lost).then(|| crate::wire::owned_body(body, 0)));
        if cur == Some(t) {
            self.try_report(t);
        }
    }

    /// Every client's slice of t arrived or was lost: report which arrived.
    fn try_report(&mut self, t: u64) {
        let clients = self.hier.clients;
        let h = self.helper();
        if h.reported || (0..clients).any(|c| !h.slices.contains_key(&(t, c))) {
            return;
        }
        h.reported = true;
        let arrived: Vec<u32> = (0..clients).filter(|&c| h.slices[&(t, c)].is_some()).map(|c| c as u32).collect();
        let lost: Vec<usize> = (0..clients).filter(|&c| h.slices[&(t, c)].is_none()).map(|c| c + 1).collect();
        self.due[WAIT as usize - 1] = None;
        if let Some(r) = self.record.as_mut() {
            r.collect.lost = (!lost.is_empty()).then_some(lost);
        }
        self.up_sent += 1;
        self.send(vec![0], Header { meta: Meta::Clients(arrived), ..Header::new(Kind::Report, t) }, None);
    }

    /// The helper's wait for iteration t ran out: the clients whose slices have not come count
    /// as failed links, and the report goes up with what arrived.
    fn helper_expired(&mut self, now: f64) {
        let Some(t) = self.cur else { return };
        let clients = self.hier.clients;
        let h = self.helper();
        if h.reported {
            return;
        }
        let absent: Vec<usize> = (0..clients).filter(|&c| !h.slices.contains_key(&(t, c))).collect();
        for &c in &absent {
            h.slices.insert((t, c), None);
        }
        let ranks = absent.iter().map(|c| (self.hier.helpers + 1 + c).to_string()).collect::<Vec<_>>();
        let why = format!(
            "iteration {t}: no slice from ranks {} within the helper's wait of {} s; reported as failed links",
            ranks.join(", "),
            wait_budget(self.deadline, 1, 1)
        );
        self.log(Event::warn(now, why));
        self.try_report(t);
    }

    fn on_instruct(&mut self, now: f64, head: Header) {
        let t = head.t;
        let Meta::Sums(sets) = head.meta else { return self.log(Event::warn(now, "an instruction without its sums")) };
        if self.cur != Some(t) {
            return self.log(Event::warn(now, format!("an instruction for iteration {t} at {:?}", self.cur)));
        }
        let p = self.hier.part(self.len);
        let h = self.helper();
        let mut arrivals = vec![];
        let mut terms = vec![];
        for (q, set) in sets.iter().enumerate() {
            for &c in set {
                if let Some(Some(slice)) = h.slices.remove(&(t, c as usize)) {
                    terms.push(Term { src: Src::Arrival(arrivals.len()), from: 0, to: q * p, len: p, coef: 1.0 });
                    arrivals.push(slice);
                }
            }
        }
        h.slices.retain(|&(u, _), _| u > t);
        if sets.is_empty() {
            return;
        }
        let body = Combination::evaluate(sets.len() * p, &terms, &[], &arrivals);
        let bytes = crate::wire::frame_bytes(&Header::new(Kind::Result, t), body.len()) as u64;
        if let Some(r) = self.record.as_mut() {
            r.send = Some(now);
            r.up_bytes = Some(bytes);
            r.rounds = Some(sets.len() as u32);
        }
        self.up_sent += 1;
        self.send(vec![0], Header::new(Kind::Result, t), Some(Arc::new(body)));
    }

    // ---- a client ----

    fn on_client_model(&mut self, now: f64, t: u64, model: Arc<P>, sent_at: f64) {
        self.flush_record();
        self.cur = Some(t);
        self.latency.record(now - sent_at);
        let index = match &self.role {
            Role::Client(c) => c.index,
            _ => unreachable!("a client's step"),
        };
        self.record = Some(Iter {
            t,
            worker: Some(index + 1),
            model: Some(now),
            latency: Some(now - sent_at),
            ..Iter::default()
        });
        self.out.push_back(Output::Compute { t, model, parts: None, load: None });
    }

    fn on_computed(&mut self, now: f64, t: u64, mut parts: Vec<P>, ready: f64) {
        if self.cur != Some(t) || !self.running {
            return;
        }
        let own = vec![parts.pop().expect("a client computes one part")];
        let mut bytes = 0;
        for h in 0..self.hier.helpers {
            let enc = hier::slice(&self.hier, h, self.len);
            let slice = Combination::evaluate(enc.len, &enc.terms, &own, &[]);
            bytes += crate::wire::frame_bytes(&Header::new(Kind::Result, t), slice.len()) as u64;
            self.up_sent += 1;
            self.send(vec![h + 1], Header::new(Kind::Result, t), Some(Arc::new(slice)));
        }
        if let Some(r) = self.record.as_mut() {
            r.ready = Some(ready);
            r.send = Some(now);
            r.up_bytes = Some(bytes);
            r.rounds = Some(self.hier.helpers as u32);
        }
        self.flush_record();
    }

    // ---- shutdown ----

    /// Stop (or abort with `failure`): tell the ranks below, wait for their goodbyes.
    fn start_drain(&mut self, now: f64, failure: Option<Failure>) {
        if !self.running {
            return;
        }
        self.running = false;
        self.flush_record();
        if let Some(f) = failure {
            self.log(Event::error(now, f.to_string()));
            self.failure = Some(f);
            self.abort = true;
        }
        let kind = if self.abort { Kind::Abort } else { Kind::Stop };
        let below = match &self.role {
            Role::Master(_) => self.helper_ranks(),
            Role::Helper(h) => h.relay.clone(),
            Role::Client(_) => vec![],
        };
        if !below.is_empty() {
            self.send(below, Header::new(kind, 0), None);
        }
        self.due[SILENCE as usize - 1] = None;
        self.arm(GRACE, now + shutdown_grace(self.deadline));
        self.check_drained(now);
    }

    fn check_drained(&mut self, now: f64) {
        if self.running {
            return;
        }
        let drained = match &self.role {
            Role::Master(m) => m.byes.iter().all(|&b| b),
            Role::Helper(h) => h.byes.iter().all(|&b| b),
            Role::Client(_) => true,
        };
        if drained {
            self.finish(now, true);
        }
    }

    fn finish(&mut self, now: f64, clean: bool) {
        if self.done {
            return;
        }
        self.done = true;
        self.due = [None; 3];
        let meta = || Meta::bye(self.up_sent, self.latency.sparse(), &self.dropped, &self.silent);
        match &self.role {
            Role::Master(_) => {}
            Role::Helper(_) => self.send(vec![0], Header { meta: meta(), ..Header::new(Kind::Bye, 0) }, None),
            Role::Client(_) => {
                self.send(self.helper_ranks(), Header { meta: meta(), ..Header::new(Kind::Bye, 0) }, None)
            }
        }
        let kind = Some(if self.abort { Ending::Abort } else { Ending::Stop });
        let s = Shutdown {
            kind,
            at: now,
            clean,
            late_discarded: Some(self.late),
            up_sent: Some(self.up_sent),
            ..Shutdown::default()
        };
        self.log(Event::Shutdown(s));
        let result = match (self.failure.take(), self.abort) {
            (Some(f), _) => Err(f),
            (None, true) => Err(Failure::Aborted),
            (None, false) => Ok(()),
        };
        self.out.push_back(Output::Done(Outcome {
            result,
            clean,
            late: self.late,
            up_sent: self.up_sent,
            latency: self.latency.clone(),
            dropped: self.dropped.clone(),
            silent: self.silent.clone(),
        }));
    }

    fn on_bye(&mut self, now: f64, from: usize, meta: Meta) {
        let helpers = self.hier.helpers;
        // a client says goodbye to every helper; only its parent passes on what it reports, so
        // the master counts its latencies and its log's trouble once
        let passes_on = match &self.role {
            Role::Helper(h) => h.relay.contains(&from),
            _ => true,
        };
        if let (true, Meta::Bye { latency, dropped, silent, .. }) = (passes_on, meta) {
            self.latency.merge(&Histogram::from_sparse(&latency));
            self.dropped.extend(dropped);
            // every helper names a silent client: once is enough
            for (r, last) in silent {
                if !self.silent.iter().any(|&(q, _)| q == r) {
                    self.silent.push((r, last));
                }
            }
        }
        match &mut self.role {
            Role::Master(m) => m.byes[from - 1] = true,
            Role::Helper(h) => h.byes[from - helpers - 1] = true,
            Role::Client(_) => {}
        }
        self.check_drained(now);
    }

    fn on_timer(&mut self, now: f64, id: u64) {
        let Some(slot) = self.due.get_mut(id as usize - 1) else { return };
        if !slot.is_some_and(|at| now >= at) {
            return;
        }
        *slot = None;
        match id {
            WAIT if self.running && matches!(self.role, Role::Helper(_)) => self.helper_expired(now),
            WAIT if self.running => self.expired(now),
            GRACE if !self.running => {
                let waiting: Vec<(u32, Option<u64>)> = match &self.role {
                    Role::Master(m) => {
                        (0..m.byes.len()).filter(|&h| !m.byes[h]).map(|h| ((h + 1) as u32, self.cur)).collect()
                    }
                    Role::Helper(h) => (0..h.byes.len())
                        .filter(|&c| !h.byes[c])
                        .map(|c| ((self.hier.helpers + 1 + c) as u32, None))
                        .collect(),
                    Role::Client(_) => vec![],
                };
                let ranks: Vec<String> = waiting.iter().map(|(r, _)| r.to_string()).collect();
                self.log(Event::warn(
                    now,
                    format!("rank {}: ranks {} did not say goodbye", self.rank, ranks.join(", ")),
                ));
                self.silent.extend(waiting);
                self.finish(now, false);
            }
            SILENCE if self.running => {
                let above = match &self.role {
                    Role::Client(c) => format!("its helper (rank {})", c.parent),
                    _ => "the master (rank 0)".into(),
                };
                let why = format!(
                    "rank {}: no message from {above} for {} s (its process is gone or stuck); giving up",
                    self.rank, self.silence
                );
                self.log(Event::error(now, why.clone()));
                self.running = false;
                self.failure = Some(Failure::Silent { rank: self.rank, secs: self.silence, message: why });
                self.finish(now, false);
            }
            _ => {}
        }
    }

    fn on_recv(&mut self, clock: &dyn Clock, from: usize, msg: Msg<P>) {
        let now = clock.now();
        let helpers = self.hier.helpers;
        let bytes = msg.frame_bytes() as u64;
        let head = msg.head.clone();
        if head.kind == Kind::Bye {
            return self.on_bye(now, from, head.meta);
        }
        let from_above = match &self.role {
            Role::Master(_) => false,
            Role::Helper(_) => from == 0,
            Role::Client(c) => from == c.parent,
        };
        if from_above && self.running {
            self.arm(SILENCE, now + self.silence);
        }
        match (&self.role, head.kind) {
            (Role::Helper(_) | Role::Client(_), Kind::Stop | Kind::Abort) if from_above => {
                self.abort |= head.kind == Kind::Abort;
                self.start_drain(now, None);
            }
            _ if !self.running => self.late += u64::from(head.kind == Kind::Result || head.kind == Kind::Report),
            (Role::Master(_), Kind::Report) if self.cur == Some(head.t) && from <= helpers => {
                self.on_report(now, from - 1, head, bytes)
            }
            (Role::Master(_), Kind::Result) if self.cur == Some(head.t) && from <= helpers => {
                self.on_upload(now, from - 1, msg.body, bytes)
            }
            (Role::Master(_), Kind::Report | Kind::Result) => self.late += 1,
            (Role::Helper(_), Kind::Model) if from_above => self.on_helper_model(now, msg),
            (Role::Helper(_), Kind::Instruct) if from_above => self.on_instruct(now, head),
            (Role::Helper(_), Kind::Result) if from > helpers => self.on_slice(from - helpers - 1, head.t, msg.body),
            (Role::Client(_), Kind::Model) if from_above => match msg.body {
                Some(model) => self.on_client_model(now, head.t, model, head.sent_at),
                None => self.log(Event::warn(now, "a model without a body")),
            },
            (_, kind) => self.log(Event::warn(now, format!("unexpected {} from rank {from}", kind.name()))),
        }
    }
}

impl<P: Vector> Machine<P> for HierNode<P> {
    fn handle(&mut self, clock: &dyn Clock, input: Input<P>) {
        let now = clock.now();
        match input {
            Input::Start { t, model } if self.running => self.start(now, t, model),
            Input::Finish { failure } => self.start_drain(now, failure.map(Failure::Job)),
            Input::Recv { from, msg } => self.on_recv(clock, from, msg),
            Input::Computed { t, parts, ready } => self.on_computed(now, t, parts, ready),
            Input::Timing { t, timing } => {
                if let (true, Some(r)) = (self.cur == Some(t), self.record.as_mut()) {
                    r.compute = timing;
                }
            }
            Input::Timer { id } => self.on_timer(now, id),
            Input::LogDropped { error } => self.dropped.push((self.rank as u32, error)),
            Input::Start { .. } | Input::Sent { .. } | Input::Reduced { .. } | Input::Contribution { .. } => {}
        }
    }

    fn poll(&mut self) -> Option<Output<P>> {
        self.out.pop_front()
    }

    /// The master and the helpers; a helper and every client (each client's slices go to
    /// every helper).
    fn contacts(&self) -> Contacts {
        let (helpers, clients) = (self.hier.helpers, self.hier.clients);
        let all_clients = helpers + 1..=helpers + clients;
        match &self.role {
            Role::Master(_) => Contacts::peers(self.rank, self.helper_ranks()),
            Role::Helper(_) => Contacts::peers(self.rank, std::iter::once(0).chain(all_clients)),
            Role::Client(_) => Contacts::peers(self.rank, self.helper_ranks()),
        }
    }
}
