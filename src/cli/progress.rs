//! The progress bar of long commands: drawn on stderr (with indicatif) from what the
//! running command reports to its [`Work`] (stage, units done of a total), only when
//! stderr is a terminal and `--quiet` is not given, and only once the work has taken
//! [`DELAY`]; cleared when the command ends.

use crate::work::Work;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a command runs before its bar appears (a quick one draws none).
pub const DELAY: Duration = Duration::from_millis(400);

/// Time between two redraws.
const TICK: Duration = Duration::from_millis(100);

/// A progress bar following a [`Work`] on its own thread; dropped, it stops and
/// clears the bar.
pub struct Bar {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Bar {
    /// Follows `work` on stderr, unless `quiet` or stderr is not a terminal (then
    /// `None`: nothing is drawn).
    pub fn spawn(work: &Work, quiet: bool) -> Option<Bar> {
        if quiet || !std::io::stderr().is_terminal() {
            return None;
        }
        Some(Bar::on(work, ProgressDrawTarget::stderr()))
    }

    /// Follows `work` on `target`.
    fn on(work: &Work, target: ProgressDrawTarget) -> Bar {
        let done = Arc::new(AtomicBool::new(false));
        let (work, stop) = (work.clone(), Arc::clone(&done));
        let thread = std::thread::spawn(move || follow(&work, &stop, target));
        Bar {
            done,
            thread: Some(thread),
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Redraws the bar from `work`'s progress every [`TICK`] until `stop`.
fn follow(work: &Work, stop: &AtomicBool, target: ProgressDrawTarget) {
    let started = Instant::now();
    let mut bar: Option<ProgressBar> = None;
    let mut target = Some(target);
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(TICK);
        let p = work.progress();
        if started.elapsed() < DELAY || p.stage.is_empty() {
            continue;
        }
        let b = bar.get_or_insert_with(|| {
            let b = ProgressBar::with_draw_target(
                Some(p.total),
                target.take().unwrap_or_else(ProgressDrawTarget::hidden),
            );
            b.set_style(style());
            b
        });
        if b.length() != Some(p.total) {
            b.set_length(p.total);
        }
        b.set_message(p.stage);
        b.set_position(p.done.min(p.total.max(p.done)));
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
}

fn style() -> ProgressStyle {
    ProgressStyle::with_template(
        "{msg}: [{bar:30}] {human_pos}/{human_len} ({percent}%, {eta} left)",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ")
}
