//! The fence every write of the host checks: a write goes out only while this replica's leadership is
//! current, that is renewed within the renew deadline. A term's fence closes for good when the term ends, so
//! a reconcile of an old term cannot write after a new term began.

use std::{
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

/// Whether writes may go out. Cheap to clone; every clone sees the same term.
#[derive(Debug, Clone, Default)]
pub struct Fence {
    /// `None`: no leader election, every write goes out.
    term: Option<Arc<Term>>,
}

#[derive(Debug)]
struct Term {
    renew_deadline: Duration,
    /// When the last successful renewal was sent (the Lease's new `renewTime` is no earlier).
    renewed: Mutex<Option<Instant>>,
    ended: AtomicBool,
}

/// A write refused because this replica is not the leader (any more).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not the leader ({reason}); nothing was written")]
pub struct NotLeader {
    reason: String,
}

impl Fence {
    /// The fence of an operator without leader election: always open.
    pub fn open() -> Self {
        Self::default()
    }

    /// The fence of a new term, closed until its first renewal ([`Fence::renewed`]).
    pub(crate) fn term(renew_deadline: Duration) -> Self {
        Self {
            term: Some(Arc::new(Term {
                renew_deadline,
                renewed: Mutex::new(None),
                ended: AtomicBool::new(false),
            })),
        }
    }

    /// Records a successful acquisition or renewal whose request was sent at `sent`.
    pub(crate) fn renewed(&self, sent: Instant) {
        if let Some(term) = &self.term {
            *term.renewed.lock().unwrap_or_else(PoisonError::into_inner) = Some(sent);
        }
    }

    /// Ends the term: every later check fails.
    pub(crate) fn close(&self) {
        if let Some(term) = &self.term {
            term.ended.store(true, Ordering::SeqCst);
        }
    }

    /// `Ok` while writes may go out: no leader election, or a term that has not ended and was renewed
    /// within the renew deadline.
    pub fn check(&self) -> Result<(), NotLeader> {
        let Some(term) = &self.term else {
            return Ok(());
        };
        if term.ended.load(Ordering::SeqCst) {
            return Err(NotLeader {
                reason: "leadership was lost or given up".into(),
            });
        }
        let renewed = *term.renewed.lock().unwrap_or_else(PoisonError::into_inner);
        match renewed.map(|at| at.elapsed()) {
            Some(age) if age < term.renew_deadline => Ok(()),
            Some(age) => Err(NotLeader {
                reason: format!(
                    "the lease was last renewed {age:.1?} ago, past the renew deadline of {:?}",
                    term.renew_deadline
                ),
            }),
            None => Err(NotLeader {
                reason: "the lease is not held yet".into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_election_the_fence_is_open() {
        assert_eq!(Fence::open().check(), Ok(()));
    }

    #[test]
    fn a_term_is_open_only_between_renewal_and_deadline() {
        let fence = Fence::term(Duration::from_millis(200));
        assert!(fence.check().is_err(), "closed before the lease is held");
        fence.renewed(Instant::now());
        assert_eq!(fence.check(), Ok(()));
        let clone = fence.clone();
        std::thread::sleep(Duration::from_millis(250));
        let refused = clone.check().unwrap_err();
        assert!(refused.to_string().contains("renew deadline"), "{refused}");
        fence.renewed(Instant::now());
        assert_eq!(clone.check(), Ok(()), "a renewal reopens it");
    }

    #[test]
    fn an_ended_term_never_reopens() {
        let fence = Fence::term(Duration::from_secs(10));
        fence.renewed(Instant::now());
        fence.close();
        let refused = fence.check().unwrap_err();
        assert!(refused.to_string().starts_with("not the leader"), "{refused}");
        fence.renewed(Instant::now());
        assert!(fence.check().is_err());
    }
}
