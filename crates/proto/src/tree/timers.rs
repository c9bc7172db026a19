//! A tree node's timers: one per purpose (re-arming replaces), each remembered with its due
//! time so that a firing the node no longer expects (disarmed, or re-armed later) is ignored.

use crate::machine::Output;

/// What a timer is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Timer {
    /// A parent's wait budget for its children (the root's: `run.deadline`).
    Wait,
    /// The shutdown grace for the children's goodbyes.
    Grace,
    /// A worker's patience with a silent parent.
    Silence,
    /// The re-grant check of uploads by grant (half the wait budget).
    Regrant,
    /// A deadline wait rule's moment: use what has arrived (`scheme.wait_s`).
    Deadline,
}

const ALL: [Timer; 5] = [Timer::Wait, Timer::Grace, Timer::Silence, Timer::Regrant, Timer::Deadline];

impl Timer {
    /// The id drivers see.
    fn id(self) -> u64 {
        ALL.iter().position(|&t| t == self).expect("listed") as u64 + 1
    }
}

/// When each timer is due (None: disarmed).
#[derive(Debug, Default)]
pub(super) struct Timers {
    due: [Option<f64>; ALL.len()],
}

impl Timers {
    /// (Re)arm `timer` at `at`: the output that asks the driver for it.
    pub(super) fn arm<P>(&mut self, timer: Timer, at: f64) -> Output<P> {
        self.due[timer.id() as usize - 1] = Some(at);
        Output::Timer { id: timer.id(), at }
    }

    /// Forget `timer` (its firing will be ignored).
    pub(super) fn disarm(&mut self, timer: Timer) {
        self.due[timer.id() as usize - 1] = None;
    }

    /// The driver fired timer `id` at `now`: the timer, if it is armed and due (it is then
    /// disarmed).
    pub(super) fn fired(&mut self, id: u64, now: f64) -> Option<Timer> {
        let timer = *ALL.get((id as usize).checked_sub(1)?)?;
        let slot = &mut self.due[id as usize - 1];
        slot.is_some_and(|at| now >= at).then(|| {
            *slot = None;
            timer
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_armed_due_timer_fires_once() {
        let mut t = Timers::default();
        let Output::<()>::Timer { id, at } = t.arm(Timer::Regrant, 2.0) else { panic!("a timer") };
        assert_eq!((id, at), (4, 2.0));
        assert_eq!(t.fired(id, 1.0), None, "not due yet");
        assert_eq!(t.fired(id, 2.0), Some(Timer::Regrant));
        assert_eq!(t.fired(id, 3.0), None, "disarmed by firing");
        let _ = t.arm::<()>(Timer::Wait, 1.0);
        let _ = t.arm::<()>(Timer::Wait, 5.0);
        assert_eq!(t.fired(1, 2.0), None, "re-armed later: the first firing is stale");
        t.disarm(Timer::Wait);
        assert_eq!(t.fired(1, 6.0), None);
        assert_eq!(t.fired(0, 6.0), None);
        assert_eq!(t.fired(9, 6.0), None);
    }
}
