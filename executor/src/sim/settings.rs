//! `Network`: a simulated network's settings, as `Builder::network` takes
//! them (plain data, checked when the pool is built).

use std::io;
use std::time::Duration;

/// The latency of a link unless `Network::latency` says: from 1 to 5 ms
/// per segment, as between two hosts of one rack.
const DEFAULT_LATENCY: (Duration, Duration) = (Duration::from_millis(1), Duration::from_millis(5));

/// A simulated network's settings ([`Builder::network`]): every link's
/// latency range and loss rate. Every draw from them (a segment's latency,
/// a datagram's loss) comes from the pool's seed, so a run replays with its
/// faults.
///
/// [`Builder::network`]: crate::Builder::network
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// let pool = pool::Builder::new()
///     .seed(7)
///     .network(
///         pool::sim::Network::new()
///             .latency(Duration::from_millis(1), Duration::from_millis(20))
///             .loss(0.01),
///     )
///     .build()
///     .unwrap();
/// # drop(pool);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Network {
    pub(crate) latency: (Duration, Duration),
    pub(crate) loss: f64,
}

impl Network {
    /// Links of 1 to 5 ms latency per segment, with no loss, duplication or
    /// reordering beyond their latency.
    pub fn new() -> Network {
        Network {
            latency: DEFAULT_LATENCY,
            loss: 0.0,
        }
    }

    /// Each segment (a TCP write, a UDP datagram, a connection's handshake)
    /// takes a seeded time between `min` and `max` to cross its link, in
    /// the pool's virtual time. A TCP stream keeps its order: a segment
    /// never arrives before the one sent ahead of it. `min` above `max` is
    /// an `InvalidInput` error at `build`.
    ///
    /// Default: 1 ms to 5 ms.
    pub fn latency(mut self, min: Duration, max: Duration) -> Network {
        self.latency = (min, max);
        self
    }

    /// A UDP datagram is dropped with probability `p`. A TCP segment is
    /// lost with the same probability and resent, so its loss shows only
    /// as a delay: the stream never has a gap. `p` outside `0.0..=1.0`
    /// (or not a number) is an `InvalidInput` error at `build`; 1.0 drops
    /// every datagram and never delivers a TCP segment.
    ///
    /// Default: 0.0.
    pub fn loss(mut self, p: f64) -> Network {
        self.loss = p;
        self
    }

    /// `InvalidInput` naming the setting that is out of range.
    pub(crate) fn check(&self) -> io::Result<()> {
        let (min, max) = self.latency;
        if min > max {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "sim::Network::latency: min ({min:?}) is above max ({max:?}); give the \
                     shortest latency first"
                ),
            ));
        }
        if !(0.0..=1.0).contains(&self.loss) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "sim::Network::loss must be a probability between 0.0 and 1.0, got {}",
                    self.loss
                ),
            ));
        }
        Ok(())
    }
}

impl Default for Network {
    fn default() -> Network {
        Network::new()
    }
}
