//! Bounded, cancellable work: one token ([`Work`]) that every long loop checks.
//!
//! A front end makes a [`Work`] (with a deadline and a budget where it serves others),
//! runs the computation inside it ([`Work::run`]) and keeps a clone to stop it from
//! elsewhere: the CLI's Ctrl-C handler, Python's `KeyboardInterrupt`, the server when
//! its client goes away or the deadline passes. The loops of the simulator, sweeps,
//! plans and the fitter call [`check`] between units of work and return
//! [`Error::Cancelled`] once the token is stopped; before starting, a command states
//! its size with [`charge`] and is refused ([`Error::TooMuchWork`], naming the
//! parameter that asked for it) when that exceeds the budget. Progress ([`start`],
//! [`advance`]) goes to the same token, for a progress bar or a callback to read.
//!
//! The token in force is per thread ([`current`]); a loop that fans out over threads
//! hands it to each task with [`within`]. With no token in force every function here
//! is a no-op that succeeds, so library users who never make one see no change.
//!
//! ```
//! use ridgeline_core::work::{self, Stop, Work};
//! let w = Work::new();
//! let stopper = w.clone();
//! let r = w.run(|| {
//!     stopper.cancel(Stop::Interrupted); // as Ctrl-C would, from another thread
//!     work::check()
//! });
//! assert!(r.unwrap_err().to_string().contains("interrupted"));
//! ```

use crate::{Error, Result};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Why a piece of work was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stop {
    /// The user interrupted it (Ctrl-C, SIGTERM, `KeyboardInterrupt`).
    Interrupted,
    /// Its deadline passed.
    Deadline,
    /// The client it was computing for went away.
    ClientGone,
}

impl Stop {
    fn code(self) -> u8 {
        match self {
            Stop::Interrupted => 1,
            Stop::Deadline => 2,
            Stop::ClientGone => 3,
        }
    }

    fn from_code(c: u8) -> Option<Stop> {
        match c {
            1 => Some(Stop::Interrupted),
            2 => Some(Stop::Deadline),
            3 => Some(Stop::ClientGone),
            _ => None,
        }
    }
}

/// What a piece of work has done so far: the stage it is in, and units done of the
/// stage's total (0 when the stage has not said).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Progress {
    /// The stage (`"sweep"`, `"simulate"`, `"plan --rate"`, `"calibrate: fitting vllm"`).
    pub stage: String,
    /// Units done.
    pub done: u64,
    /// Units in all (0: unknown).
    pub total: u64,
}

#[derive(Debug)]
struct Inner {
    stop: AtomicU8,
    deadline: Option<(Instant, Duration)>,
    budget: Option<f64>,
    done: AtomicU64,
    total: AtomicU64,
    stage: Mutex<String>,
}

/// A cancellation token with an optional deadline and work budget, and the progress
/// of the work it runs. Clones share one token.
#[derive(Debug, Clone)]
pub struct Work(Arc<Inner>);

impl Default for Work {
    fn default() -> Self {
        Work::new()
    }
}

thread_local! {
    /// The token in force, and whether [`advance`] counts (off inside [`quietly`]).
    static CURRENT: RefCell<(Option<Work>, bool)> = const { RefCell::new((None, true)) };
}

impl Work {
    /// A token with no deadline and no budget.
    pub fn new() -> Work {
        Work::build(None, None)
    }

    fn build(deadline: Option<(Instant, Duration)>, budget: Option<f64>) -> Work {
        Work(Arc::new(Inner {
            stop: AtomicU8::new(0),
            deadline,
            budget,
            done: AtomicU64::new(0),
            total: AtomicU64::new(0),
            stage: Mutex::new(String::new()),
        }))
    }

    /// A token whose work stops ([`Stop::Deadline`]) once `after` has passed from now,
    /// and that refuses work over `budget` units ([`charge`]; `None`: no budget).
    pub fn bounded(after: Duration, budget: Option<f64>) -> Work {
        Work::build(Some((Instant::now() + after, after)), budget)
    }

    /// The budget in units (`None`: unbounded).
    pub fn budget(&self) -> Option<f64> {
        self.0.budget
    }

    /// Stops the work: the next [`check`] inside it fails. The first reason given wins.
    pub fn cancel(&self, why: Stop) {
        let _ = self
            .0
            .stop
            .compare_exchange(0, why.code(), Ordering::SeqCst, Ordering::SeqCst);
    }

    /// Why the work was stopped, if it was (a passed deadline counts once checked).
    pub fn stopped(&self) -> Option<Stop> {
        Stop::from_code(self.0.stop.load(Ordering::Relaxed))
    }

    /// `Err(Error::Cancelled)` once the work is stopped or its deadline has passed.
    pub fn check(&self) -> Result<()> {
        if self.0.stop.load(Ordering::Relaxed) == 0
            && let Some((at, _)) = self.0.deadline
            && Instant::now() >= at
        {
            self.cancel(Stop::Deadline);
        }
        match self.stopped() {
            None => Ok(()),
            Some(why) => Err(Error::Cancelled {
                reason: match why {
                    Stop::Interrupted => "interrupted".to_string(),
                    Stop::Deadline => format!(
                        "stopped at its deadline of {} s",
                        short(self.0.deadline.map_or(0.0, |(_, d)| d.as_secs_f64()))
                    ),
                    Stop::ClientGone => "stopped: the client went away".to_string(),
                },
            }),
        }
    }

    /// Refuses `units` of work over the budget ([`Error::TooMuchWork`] naming `param`,
    /// the parameter that asked for the most; `what` says what the units count).
    pub(crate) fn charge(&self, units: f64, param: &str, what: &str) -> Result<()> {
        match self.0.budget {
            Some(b) if units.is_nan() || units > b => Err(Error::TooMuchWork {
                param: param.to_string(),
                message: format!(
                    "this asks for {} {what}, over the budget of {} per request; ask for less",
                    short(units),
                    short(b)
                ),
            }),
            _ => Ok(()),
        }
    }

    /// Begins a stage of `total` units (0: unknown), with no unit done yet.
    pub(crate) fn start(&self, stage: &str, total: u64) {
        *self.0.stage.lock().unwrap_or_else(|e| e.into_inner()) = stage.to_string();
        self.0.done.store(0, Ordering::Relaxed);
        self.0.total.store(total, Ordering::Relaxed);
    }

    /// Sets the stage and its count at once (for a callback that reports absolute
    /// figures, as the fitter's does).
    pub fn set(&self, stage: &str, done: u64, total: u64) {
        *self.0.stage.lock().unwrap_or_else(|e| e.into_inner()) = stage.to_string();
        self.0.done.store(done, Ordering::Relaxed);
        self.0.total.store(total, Ordering::Relaxed);
    }

    /// Counts `units` more done.
    pub fn advance(&self, units: u64) {
        self.0.done.fetch_add(units, Ordering::Relaxed);
    }

    /// The progress so far.
    pub fn progress(&self) -> Progress {
        Progress {
            stage: self
                .0
                .stage
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            done: self.0.done.load(Ordering::Relaxed),
            total: self.0.total.load(Ordering::Relaxed),
        }
    }

    /// Runs `f` with this token in force on the calling thread (the one before it is
    /// put back afterwards, also when `f` panics).
    pub fn run<T>(&self, f: impl FnOnce() -> T) -> T {
        in_force(Some(self.clone()), true, f)
    }
}

/// Runs `f` with `(work, counting)` in force on this thread, putting back what was
/// before afterwards (also when `f` panics).
fn in_force<T>(work: Option<Work>, counting: bool, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<(Option<Work>, bool)>);
    impl Drop for Restore {
        fn drop(&mut self) {
            if let Some(prev) = self.0.take() {
                CURRENT.with(|c| *c.borrow_mut() = prev);
            }
        }
    }
    let prev = CURRENT.with(|c| c.replace((work, counting)));
    let _restore = Restore(Some(prev));
    f()
}

/// A count in a message: whole numbers as they are up to a million, fractions to
/// three decimals (`0.5`), then `1.2e9`.
fn short(x: f64) -> String {
    if x.abs() < 1e6 && x.fract() == 0.0 {
        format!("{x:.0}")
    } else if x.abs() < 1e6 {
        let s = format!("{x:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{x:.2e}")
    }
}

/// The token in force on this thread, if any (to hand to other threads with
/// [`within`]).
pub fn current() -> Option<Work> {
    CURRENT.with(|c| c.borrow().0.clone())
}

/// Runs `f` under the same token, with its [`advance`]s not counted: how a loop that
/// counts its own units (a plan's layouts) runs work that counts others (each
/// layout's simulated requests).
pub fn quietly<T>(f: impl FnOnce() -> T) -> T {
    in_force(current(), false, f)
}

/// Runs `f` with `work` in force (nothing changes for `None`): how a task on a worker
/// thread keeps the token of the thread that started it.
pub fn within<T>(work: Option<&Work>, f: impl FnOnce() -> T) -> T {
    match work {
        Some(w) => w.run(f),
        None => f(),
    }
}

/// [`Work::check`] of the token in force; `Ok` when there is none.
pub fn check() -> Result<()> {
    CURRENT.with(|c| c.borrow().0.as_ref().map_or(Ok(()), Work::check))
}

/// `Work::charge` of the token in force; `Ok` when there is none.
pub fn charge(units: f64, param: &str, what: &str) -> Result<()> {
    CURRENT.with(|c| {
        c.borrow()
            .0
            .as_ref()
            .map_or(Ok(()), |w| w.charge(units, param, what))
    })
}

/// `Work::start` of the token in force, if any (not inside [`quietly`]).
pub fn start(stage: &str, total: u64) {
    CURRENT.with(|c| {
        if let (Some(w), true) = &*c.borrow() {
            w.start(stage, total)
        }
    })
}

/// [`Work::advance`] of the token in force, if any (not inside [`quietly`]).
pub fn advance(units: u64) {
    CURRENT.with(|c| {
        if let (Some(w), true) = &*c.borrow() {
            w.advance(units)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_token_no_effect() {
        assert!(check().is_ok());
        assert!(charge(1e30, "requests", "simulated requests").is_ok());
        start("x", 10);
        advance(3);
        assert!(current().is_none());
    }

    #[test]
    fn a_cancelled_token_fails_its_checks_on_every_thread_it_is_handed_to() {
        let w = Work::new();
        w.run(|| {
            assert!(check().is_ok());
            let here = current();
            w.cancel(Stop::ClientGone);
            // the first reason wins
            w.cancel(Stop::Interrupted);
            let on_other =
                std::thread::scope(|s| s.spawn(|| within(here.as_ref(), check)).join().unwrap());
            assert!(
                on_other
                    .unwrap_err()
                    .to_string()
                    .contains("client went away")
            );
        });
        // the token is no longer in force outside run
        assert!(check().is_ok());
        assert_eq!(w.stopped(), Some(Stop::ClientGone));
    }

    #[test]
    fn a_deadline_stops_and_a_budget_refuses_naming_the_parameter() {
        let w = Work::bounded(Duration::ZERO, Some(1000.0));
        let e = w.check().unwrap_err().to_string();
        assert!(e.contains("deadline of 0 s"), "{e}");
        assert_eq!(short(0.5), "0.5");
        assert_eq!(short(2.5e7), "2.50e7");
        assert_eq!(w.stopped(), Some(Stop::Deadline));
        // 1000 units fit the budget of 1000; 1001 do not; NaN never fits
        assert!(w.charge(1000.0, "requests", "simulated requests").is_ok());
        let e = w
            .charge(1001.0, "requests", "simulated requests")
            .unwrap_err();
        assert!(matches!(&e, Error::TooMuchWork { param, .. } if param == "requests"));
        assert!(e.to_string().contains("1001 simulated requests"), "{e}");
        assert!(w.charge(f64::NAN, "rate", "x").is_err());
    }

    #[test]
    fn progress_counts_per_stage() {
        let w = Work::new();
        w.run(|| {
            start("sweep", 100);
            advance(30);
            advance(12);
            // nested work counting its own units is not counted
            quietly(|| {
                start("simulate", 5);
                advance(1000);
                assert!(current().is_some());
            });
        });
        assert_eq!(
            w.progress(),
            Progress {
                stage: "sweep".into(),
                done: 42,
                total: 100
            }
        );
    }
}
