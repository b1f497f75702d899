//! `block_on`'s waker racing the calling thread going to sleep.

use crate::sync::{AtomicBool, Mutex, Ordering};
use loom::sync::Arc;
use loom::thread;
use std::future::poll_fn;
use std::sync::atomic::AtomicUsize;
use std::task::{Poll, Waker};

/// A one-shot event: a flag and the waker of whoever waits for it.
struct Event {
    done: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Event {
    fn fire(&self) {
        self.done.store(true, Ordering::Release);
        let waker = self.waker.lock().take();
        if let Some(w) = waker {
            w.wake();
        }
    }
}

#[test]
fn a_wake_racing_block_on_going_to_sleep_is_never_lost() {
    static N: AtomicUsize = AtomicUsize::new(0);
    super::model("block_on_wake_vs_sleep", &N, || {
        let event = Arc::new(Event {
            done: AtomicBool::new(false),
            waker: Mutex::new(None),
        });
        let firer = {
            let event = event.clone();
            thread::spawn(move || event.fire())
        };
        crate::scheduler::block_on::block_on(poll_fn(|cx| {
            if event.done.load(Ordering::Acquire) {
                return Poll::Ready(());
            }
            *event.waker.lock() = Some(cx.waker().clone());
            if event.done.load(Ordering::Acquire) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        }));
        firer.join().unwrap();
    });
}
