//! Message accounting: did every receiver get exactly what was sent?
//!
//! Owns: the per-receiver tally ([`Received`]), the per-group check
//! ([`check_group`]), the whole run's check over every joined task
//! ([`verify_groups`]) and the error that names the receiver and what went
//! wrong ([`VerifyError`]). Every backend funnels its counts through here,
//! so "lost", "short" and "extra" mean the same thing everywhere. Must not:
//! do I/O or know how the counts were gathered.

use crate::error::BenchError;
use std::fmt;

/// What one receiver saw by the time its channel reached end of file.
///
/// A receiver reads its stream in `s`-byte messages (as hackbench does); a
/// stream that ends inside a message leaves `partial_bytes > 0`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Received {
    /// Complete `s`-byte messages read.
    pub messages: u64,
    /// Bytes of an incomplete trailing message (0 when the stream ended on a
    /// message boundary).
    pub partial_bytes: usize,
}

impl Received {
    /// Counts `n` more bytes read into `size`-byte messages: a receiver
    /// reads into `buf[self.partial_bytes..size]` (the rest of the current
    /// message, as hackbench does) and then calls this.
    #[inline]
    pub fn add(&mut self, n: usize, size: usize) {
        self.partial_bytes += n;
        if self.partial_bytes == size {
            self.messages += 1;
            self.partial_bytes = 0;
        }
    }
}

/// A receiver that did not get exactly the messages its senders sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VerifyError {
    /// Fewer complete messages than sent (a message was lost).
    Lost {
        /// Group index.
        group: usize,
        /// Receiver index inside the group.
        receiver: usize,
        /// Complete messages received.
        got: u64,
        /// Messages sent to this receiver.
        expected: u64,
    },
    /// More complete messages than sent.
    Extra {
        /// Group index.
        group: usize,
        /// Receiver index inside the group.
        receiver: usize,
        /// Complete messages received.
        got: u64,
        /// Messages sent to this receiver.
        expected: u64,
    },
    /// The stream ended inside a message: some message was short.
    Short {
        /// Group index.
        group: usize,
        /// Receiver index inside the group.
        receiver: usize,
        /// Bytes of the incomplete message.
        partial_bytes: usize,
        /// The message size.
        datasize: usize,
    },
    /// A sender did not complete its loops (it stopped early without an I/O
    /// error being reported).
    SenderIncomplete {
        /// Group index.
        group: usize,
        /// Sender index inside the group.
        sender: usize,
        /// Loops it completed.
        loops: u64,
        /// Loops it was asked for.
        expected: u64,
    },
    /// A task never reported its counts (it died before finishing).
    Missing {
        /// Group index.
        group: usize,
        /// "sender" or "receiver".
        role: &'static str,
        /// Index inside the group.
        index: usize,
    },
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            VerifyError::Lost {
                group,
                receiver,
                got,
                expected,
            } => write!(
                f,
                "group {group} receiver {receiver}: lost {} message(s) (received {got} of {expected})",
                expected - got
            ),
            VerifyError::Extra {
                group,
                receiver,
                got,
                expected,
            } => write!(
                f,
                "group {group} receiver {receiver}: {} extra message(s) (received {got}, {expected} sent)",
                got - expected
            ),
            VerifyError::Short {
                group,
                receiver,
                partial_bytes,
                datasize,
            } => write!(
                f,
                "group {group} receiver {receiver}: short message (stream ended {partial_bytes} bytes into a {datasize}-byte message)"
            ),
            VerifyError::SenderIncomplete {
                group,
                sender,
                loops,
                expected,
            } => write!(
                f,
                "group {group} sender {sender}: completed {loops} of {expected} loops"
            ),
            VerifyError::Missing { group, role, index } => {
                write!(f, "group {group} {role} {index}: never reported its counts")
            }
        }
    }
}

impl std::error::Error for VerifyError {}

/// One group's tasks after they were joined: each sender's completed
/// loops and each receiver's tally, or why that task failed.
#[derive(Debug, Default)]
pub struct GroupOutcome {
    /// Per sender, in order.
    pub sent: Vec<Result<u64, BenchError>>,
    /// Per receiver, in order.
    pub received: Vec<Result<Received, BenchError>>,
}

/// Checks a whole run: per group, in order, the first failed sender, then
/// the first failed receiver, then [`check_group`]; the first error wins.
/// Returns the number of messages verified.
pub fn verify_groups(
    groups: Vec<GroupOutcome>,
    datasize: usize,
    expected_loops: Option<u64>,
) -> Result<u64, BenchError> {
    let mut messages = 0;
    for (gi, g) in groups.into_iter().enumerate() {
        let sent = g.sent.into_iter().collect::<Result<Vec<_>, _>>()?;
        let received = g.received.into_iter().collect::<Result<Vec<_>, _>>()?;
        messages += check_group(gi, datasize, expected_loops, &sent, &received)?;
    }
    Ok(messages)
}

/// Checks one group.
///
/// `sent[i]` is the number of loops sender `i` completed (each loop sends one
/// message to every receiver of the group), so every receiver must have got
/// exactly `sum(sent)` messages of `datasize` bytes. With `expected_loops`
/// set (a fixed `-l` run) every sender must also have completed exactly
/// that many loops. Returns the number of messages verified.
pub fn check_group(
    group: usize,
    datasize: usize,
    expected_loops: Option<u64>,
    sent: &[u64],
    received: &[Received],
) -> Result<u64, VerifyError> {
    if let Some(expected) = expected_loops {
        for (sender, &loops) in sent.iter().enumerate() {
            if loops != expected {
                return Err(VerifyError::SenderIncomplete {
                    group,
                    sender,
                    loops,
                    expected,
                });
            }
        }
    }
    let expected: u64 = sent.iter().sum();
    for (receiver, r) in received.iter().enumerate() {
        check_receiver(group, receiver, datasize, expected, *r)?;
    }
    Ok(expected * received.len() as u64)
}

/// Checks one receiver that should have got exactly `expected` messages.
pub fn check_receiver(
    group: usize,
    receiver: usize,
    datasize: usize,
    expected: u64,
    r: Received,
) -> Result<(), VerifyError> {
    if r.partial_bytes != 0 {
        return Err(VerifyError::Short {
            group,
            receiver,
            partial_bytes: r.partial_bytes,
            datasize,
        });
    }
    if r.messages < expected {
        return Err(VerifyError::Lost {
            group,
            receiver,
            got: r.messages,
            expected,
        });
    }
    if r.messages > expected {
        return Err(VerifyError::Extra {
            group,
            receiver,
            got: r.messages,
            expected,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(messages: u64) -> Received {
        Received {
            messages,
            partial_bytes: 0,
        }
    }

    #[test]
    fn received_counts_whole_messages_across_partial_reads() {
        let mut got = Received::default();
        for n in [60, 40, 100, 30] {
            got.add(n, 100);
        }
        assert_eq!(
            got,
            Received {
                messages: 2,
                partial_bytes: 30
            }
        );
    }

    #[test]
    fn verify_groups_sums_and_reports_the_first_error_in_order() {
        let good = || GroupOutcome {
            sent: vec![Ok(3), Ok(3)],
            received: vec![Ok(ok(6)), Ok(ok(6))],
        };
        assert_eq!(
            verify_groups(vec![good(), good()], 100, Some(3)).unwrap(),
            24
        );
        // Group 1's failed receiver is reported before group 1's count
        // check, and group 0's lost message before both.
        let mut failed = good();
        failed.received[1] = Err(BenchError::Task("group 1 receiver 1 panicked".into()));
        let mut lossy = good();
        lossy.received[0] = Ok(ok(5));
        let err = verify_groups(vec![lossy, failed], 100, Some(3)).unwrap_err();
        assert!(
            matches!(err, BenchError::Verify(VerifyError::Lost { group: 0, .. })),
            "{err}"
        );
        let mut failed = good();
        failed.received[1] = Err(BenchError::Task("group 1 receiver 1 panicked".into()));
        let err = verify_groups(vec![good(), failed], 100, Some(3)).unwrap_err();
        assert!(
            err.to_string().contains("group 1 receiver 1 panicked"),
            "{err}"
        );
    }

    #[test]
    fn exact_counts_pass() {
        assert_eq!(
            check_group(0, 100, Some(10), &[10, 10], &[ok(20), ok(20)]),
            Ok(40)
        );
        assert_eq!(check_group(0, 100, None, &[3, 5], &[ok(8)]), Ok(8));
    }

    #[test]
    fn lost_short_extra_and_incomplete_are_errors() {
        assert!(matches!(
            check_group(1, 100, Some(10), &[10, 10], &[ok(20), ok(19)]),
            Err(VerifyError::Lost {
                group: 1,
                receiver: 1,
                got: 19,
                expected: 20
            })
        ));
        assert!(matches!(
            check_group(0, 100, None, &[10], &[ok(11)]),
            Err(VerifyError::Extra { .. })
        ));
        let short = Received {
            messages: 19,
            partial_bytes: 99,
        };
        let e = check_group(0, 100, Some(10), &[10, 10], &[short]).unwrap_err();
        assert!(e.to_string().contains("short message"), "{e}");
        assert!(matches!(
            check_group(0, 100, Some(10), &[10, 9], &[ok(19)]),
            Err(VerifyError::SenderIncomplete { sender: 1, .. })
        ));
    }
}
