//! When a batch of changes is ready: once events have been quiet for the
//! debounce window, or once the first of them has waited `max_wait` (so a
//! folder that never stops changing still gets committed).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

pub struct Debouncer {
    quiet: Duration,
    max_wait: Duration,
    /// Collections with changes not yet indexed.
    dirty: BTreeSet<String>,
    first: Option<Instant>,
    last: Option<Instant>,
}

impl Debouncer {
    pub fn new(quiet: Duration) -> Debouncer {
        // Ten windows, at least two seconds: a `git checkout` of thousands
        // of files arrives as one batch, a steady trickle as several.
        let max_wait = (quiet * 10).max(Duration::from_secs(2));
        Debouncer { quiet, max_wait, dirty: BTreeSet::new(), first: None, last: None }
    }

    pub fn changed(&mut self, collection: &str, now: Instant) {
        self.dirty.insert(collection.to_string());
        self.first.get_or_insert(now);
        self.last = Some(now);
    }

    /// How long to wait for more events before [`Self::ready`] may say yes
    /// (`None`: nothing pending, wait as long as you like).
    pub fn wait(&self, now: Instant) -> Option<Duration> {
        let (first, last) = (self.first?, self.last?);
        let quiet_left = (last + self.quiet).saturating_duration_since(now);
        let max_left = (first + self.max_wait).saturating_duration_since(now);
        Some(quiet_left.min(max_left))
    }

    /// The collections to index now, if the batch is ready; the batch is
    /// then taken and the next one starts empty.
    pub fn ready(&mut self, now: Instant) -> Option<Vec<String>> {
        if self.wait(now)? > Duration::ZERO {
            return None;
        }
        self.first = None;
        self.last = None;
        Some(std::mem::take(&mut self.dirty).into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_waits_for_quiet_but_not_forever() {
        let start = Instant::now();
        let ms = |n| start + Duration::from_millis(n);
        let mut d = Debouncer::new(Duration::from_millis(300));
        assert_eq!(d.wait(start), None);
        assert_eq!(d.ready(start), None, "nothing pending");
        d.changed("notes", ms(0));
        d.changed("docs", ms(100));
        assert_eq!(d.ready(ms(350)), None, "100 + 300 not yet reached");
        assert_eq!(d.wait(ms(350)), Some(Duration::from_millis(50)));
        assert_eq!(d.ready(ms(400)), Some(vec!["docs".to_string(), "notes".to_string()]));
        assert_eq!(d.ready(ms(400)), None, "taken");
        // Events every 200 ms never leave 300 ms of quiet: the batch is
        // committed once the first event has waited 3 s.
        let mut t = 1000;
        let mut batches = 0;
        while t < 10_000 {
            d.changed("notes", ms(t));
            if d.ready(ms(t)).is_some() {
                batches += 1;
            }
            t += 200;
        }
        assert!((2..=4).contains(&batches), "{batches} batches in 9 s of steady changes");
    }
}
