//! When the live catalog looks at a watched directory again: when the file
//! system says something in it changed (inotify on Linux, through the
//! `notify` crate), so an idle server is not woken at all; every [`POLL`]
//! where no watch can be set (the directory is missing or cannot be created,
//! or the system is out of watches).

use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

/// How often a directory without a watch is checked.
pub(crate) const POLL: Duration = Duration::from_secs(2);

/// The source of "look again" for one directory.
pub(crate) struct Changes {
    dir: PathBuf,
    trigger: Trigger,
}

enum Trigger {
    /// Woken by the watcher's thread (which itself sleeps until the kernel
    /// reports an event). The channel holds at most one wake-up: a burst of
    /// events while a check runs makes one more check, not one per event.
    Watch {
        _watcher: RecommendedWatcher,
        woken: mpsc::Receiver<()>,
    },
    Poll,
}

impl Changes {
    /// Watch `dir` and everything under it (a package directory edited in
    /// place counts as a change too), creating `dir` if it is missing.
    pub(crate) fn watch(dir: &Path) -> Changes {
        let dir = dir.to_path_buf();
        let trigger = Trigger::watching(&dir).unwrap_or_else(|error| {
            tracing::warn!(dir = %dir.display(), %error, "no file watch; checking every 2 s");
            Trigger::Poll
        });
        Changes { dir, trigger }
    }

    /// Whether a file watch is set (rather than a timer).
    pub(crate) fn is_watching(&self) -> bool {
        matches!(self.trigger, Trigger::Watch { .. })
    }

    /// Wait until the directory may have changed.
    pub(crate) async fn next(&mut self) {
        // A directory removed and made again needs a new watch; one that is
        // gone is polled until it is back.
        let lost = match &self.trigger {
            Trigger::Watch { .. } => !self.dir.is_dir(),
            Trigger::Poll => false,
        };
        if lost {
            self.trigger = Trigger::Poll;
        } else if !self.is_watching()
            && self.dir.is_dir()
            && let Ok(trigger) = Trigger::watching(&self.dir)
        {
            self.trigger = trigger;
            return; // look once: it may have changed while unwatched
        }
        match &mut self.trigger {
            Trigger::Watch { woken, .. } => {
                if woken.recv().await.is_none() {
                    // The watcher's thread ended: fall back to the timer.
                    self.trigger = Trigger::Poll;
                }
            }
            Trigger::Poll => tokio::time::sleep(POLL).await,
        }
    }
}

impl Trigger {
    fn watching(dir: &Path) -> notify::Result<Trigger> {
        std::fs::create_dir_all(dir)?;
        let (wake, woken) = mpsc::channel(1);
        // Any change, or an error (e.g. the kernel's event queue overflowed),
        // means "look again": the check compares the whole directory. Not an
        // access: the check's own listing opens the directory, and waking on
        // that would check again, forever.
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                if event.is_ok_and(|event| matches!(event.kind, EventKind::Access(_))) {
                    return;
                }
                let _ = wake.try_send(());
            })?;
        watcher.watch(dir, RecursiveMode::Recursive)?;
        Ok(Trigger::Watch {
            _watcher: watcher,
            woken,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Longer than a poll interval: a timer would have fired.
    #[tokio::test]
    async fn a_watched_directory_that_does_not_change_never_wakes_its_reader() {
        let dir = tempfile::tempdir().unwrap();
        let mut changes = Changes::watch(&dir.path().join("packages"));
        assert!(changes.is_watching(), "inotify is available here");
        let woke = tokio::time::timeout(POLL + Duration::from_millis(500), changes.next()).await;
        assert!(woke.is_err(), "woken with nothing changed");
    }

    /// The live catalog lists the directory after each wake-up; that must
    /// not count as a change (it would wake the reader again, forever).
    #[tokio::test]
    async fn listing_and_reading_the_directory_does_not_wake_the_reader() {
        let dir = tempfile::tempdir().unwrap();
        let packages = dir.path().join("packages");
        std::fs::create_dir_all(packages.join("live")).unwrap();
        std::fs::write(packages.join("live").join("manifest.toml"), "x").unwrap();
        let mut changes = Changes::watch(&packages);
        assert!(changes.is_watching());
        for entry in std::fs::read_dir(&packages).unwrap() {
            let entry = entry.unwrap();
            entry.metadata().unwrap();
            std::fs::read_dir(entry.path()).unwrap().for_each(drop);
        }
        std::fs::read(packages.join("live").join("manifest.toml")).unwrap();
        let woke = tokio::time::timeout(POLL + Duration::from_millis(500), changes.next()).await;
        assert!(woke.is_err(), "woken by a read");
    }

    #[tokio::test]
    async fn a_package_moved_in_or_edited_in_place_wakes_the_reader() {
        let dir = tempfile::tempdir().unwrap();
        let packages = dir.path().join("packages");
        let mut changes = Changes::watch(&packages);
        let within = Duration::from_secs(30);

        // Staged beside, then renamed into place (as `warden install` does).
        let staging = packages.join(".live.installing");
        std::fs::create_dir(&staging).unwrap();
        std::fs::write(staging.join("manifest.toml"), "x").unwrap();
        std::fs::rename(&staging, packages.join("live")).unwrap();
        tokio::time::timeout(within, changes.next())
            .await
            .expect("an install is seen");
        // Drain what the burst left, then edit a file inside the package.
        while tokio::time::timeout(Duration::from_millis(100), changes.next())
            .await
            .is_ok()
        {}
        std::fs::write(packages.join("live").join("extra.md"), "y").unwrap();
        tokio::time::timeout(within, changes.next())
            .await
            .expect("a file added inside a package is seen");
    }

    #[tokio::test]
    async fn a_removed_directory_is_polled_and_watched_again_once_back() {
        let dir = tempfile::tempdir().unwrap();
        let packages = dir.path().join("packages");
        let mut changes = Changes::watch(&packages);
        std::fs::remove_dir(&packages).unwrap();
        tokio::time::timeout(Duration::from_secs(30), changes.next())
            .await
            .expect("the removal is seen");
        changes.next().await; // notices the watch is gone, waits one poll
        assert!(!changes.is_watching());
        std::fs::create_dir(&packages).unwrap();
        changes.next().await;
        assert!(changes.is_watching(), "watched again once it exists");
    }
}
