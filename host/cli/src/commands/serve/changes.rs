//! When the live catalog looks at a watched directory again: when the file
//! system says something in it changed (inotify on Linux, through the
//! `notify` crate), so an idle server is not woken at all; every [`POLL`]
//! where no watch can be set (the directory is missing or cannot be created,
//! or the system is out of watches).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use notify::event::ModifyKind;
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
        watcher: RecommendedWatcher,
        /// The package directories watched besides the root.
        packages: BTreeSet<PathBuf>,
        woken: mpsc::Receiver<()>,
        /// Set when the watched directory itself is removed or moved away.
        root_gone: Arc<AtomicBool>,
    },
    Poll,
}

impl Changes {
    /// Watch `dir` and each package directory in it (a package directory
    /// edited in place counts as a change too), creating `dir` if missing.
    pub(crate) fn watch(dir: &Path) -> Changes {
        let dir = dir.to_path_buf();
        let trigger = Trigger::watching(&dir).unwrap_or_else(|error| {
            tracing::warn!(
                dir = %dir.display(), %error, every = ?POLL,
                "no file watch; checking on a timer"
            );
            Trigger::Poll
        });
        Changes { dir, trigger }
    }

    /// Whether a file watch is set (rather than a timer).
    #[cfg(test)]
    fn is_watching(&self) -> bool {
        matches!(self.trigger, Trigger::Watch { .. })
    }

    /// Wait until the directory may have changed.
    pub(crate) async fn next(&mut self) {
        let present = self.dir.is_dir();
        let stale = match &self.trigger {
            // Removed or moved away, perhaps replaced by another directory
            // (the watch went with the one that is gone).
            Trigger::Watch { root_gone, .. } => !present || root_gone.load(Ordering::Relaxed),
            Trigger::Poll => true,
        };
        if stale {
            match present.then(|| Trigger::watching(&self.dir)) {
                Some(Ok(trigger)) => {
                    self.trigger = trigger;
                    return; // look once: it may have changed while unwatched
                }
                // Gone (polled until it is back), or no watch to be had.
                _ => self.trigger = Trigger::Poll,
            }
        }
        if let Trigger::Watch {
            watcher, packages, ..
        } = &mut self.trigger
        {
            follow_packages(watcher, packages, &self.dir);
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
        let root_gone = Arc::new(AtomicBool::new(false));
        let (root, gone) = (dir.to_path_buf(), Arc::clone(&root_gone));
        // Any change, or an error (e.g. the kernel's event queue overflowed),
        // means "look again": the check compares the whole directory. Not an
        // access: the check's own listing opens the directory, and waking on
        // that would check again, forever.
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                if let Ok(event) = &event {
                    match event.kind {
                        EventKind::Access(_) => return,
                        EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_))
                            if event.paths.contains(&root) =>
                        {
                            gone.store(true, Ordering::Relaxed);
                        }
                        _ => {}
                    }
                }
                let _ = wake.try_send(());
            })?;
        watcher.watch(dir, RecursiveMode::NonRecursive)?;
        let mut packages = BTreeSet::new();
        follow_packages(&mut watcher, &mut packages, dir);
        Ok(Trigger::Watch {
            watcher,
            packages,
            woken,
            root_gone,
        })
    }
}

/// Watch each package directory directly under `dir` (not deeper, and not
/// dot-named staging directories): what the live catalog's signature sees is
/// the root's entries and each package directory's own modification time,
/// which only its direct entries change. Two levels, so a package's depth
/// cannot spend the user's inotify watches. A watch that cannot be added
/// leaves that package's in-place edits unseen until the next event.
fn follow_packages(watcher: &mut RecommendedWatcher, packages: &mut BTreeSet<PathBuf>, dir: &Path) {
    let now: BTreeSet<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    for gone in packages.difference(&now) {
        let _ = watcher.unwatch(gone); // the kernel drops a removed one itself
    }
    packages.retain(|p| now.contains(p));
    for new in now {
        if !packages.contains(&new) {
            match watcher.watch(&new, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    packages.insert(new);
                }
                Err(error) => {
                    tracing::debug!(dir = %new.display(), %error, "package directory not watched");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `packages` directory path in a fresh temporary directory (not
    /// created: [`Changes::watch`] creates it).
    fn packages_dir() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let packages = dir.path().join("packages");
        (dir, packages)
    }

    /// Asserts that `changes` stays asleep for longer than a poll interval
    /// (a timer would have fired).
    async fn assert_quiet_past_a_poll(changes: &mut Changes, woken_by: &str) {
        let quiet = tokio::time::timeout(POLL + Duration::from_millis(500), changes.next())
            .await
            .is_err();
        assert!(quiet, "woken by {woken_by}");
    }

    /// Waits (bounded) for a wake-up, then lets the rest of its burst pass.
    async fn woken(changes: &mut Changes, what: &str) {
        tokio::time::timeout(Duration::from_secs(10), changes.next())
            .await
            .unwrap_or_else(|_| panic!("{what} is seen"));
        while tokio::time::timeout(Duration::from_millis(100), changes.next())
            .await
            .is_ok()
        {}
    }

    /// [`woken`] by the file watch: watching before and after. With a watch
    /// set, [`Changes::next`] returns only when the watch reports something
    /// (or to set a lost watch again), never on the fallback timer, which
    /// would wake it within the bound as well whatever the watch does.
    async fn woken_by_the_watch(changes: &mut Changes, what: &str) {
        assert!(changes.is_watching(), "watching before {what}");
        woken(changes, what).await;
        assert!(changes.is_watching(), "watching after {what}");
    }

    #[tokio::test]
    async fn a_watched_directory_that_does_not_change_never_wakes_its_reader() {
        let (_dir, packages) = packages_dir();
        let mut changes = Changes::watch(&packages);
        assert!(changes.is_watching(), "inotify is available here");
        assert_quiet_past_a_poll(&mut changes, "nothing").await;
    }

    /// The live catalog lists the directory after each wake-up; that must
    /// not count as a change (it would wake the reader again, forever).
    #[tokio::test]
    async fn listing_and_reading_the_directory_does_not_wake_the_reader() {
        let (_dir, packages) = packages_dir();
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
        assert_quiet_past_a_poll(&mut changes, "a read").await;
    }

    #[tokio::test]
    async fn a_package_moved_in_or_edited_in_place_wakes_the_reader() {
        let (_dir, packages) = packages_dir();
        let mut changes = Changes::watch(&packages);
        // Staged beside, then renamed into place (as `warden install` does).
        let staging = packages.join(".live.installing");
        std::fs::create_dir(&staging).unwrap();
        std::fs::write(staging.join("manifest.toml"), "x").unwrap();
        std::fs::rename(&staging, packages.join("live")).unwrap();
        woken_by_the_watch(&mut changes, "an install").await;
        std::fs::write(packages.join("live").join("extra.md"), "y").unwrap();
        woken_by_the_watch(&mut changes, "a file added inside a package").await;
    }

    /// Two levels: however deep a package's files lie, it costs one watch.
    #[tokio::test]
    async fn only_the_root_and_each_package_directory_are_watched() {
        let (_dir, packages) = packages_dir();
        let deep = packages.join("live").join("a").join("b").join("c");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::create_dir_all(packages.join(".live.installing")).unwrap();
        let mut changes = Changes::watch(&packages);
        let Trigger::Watch {
            packages: watched, ..
        } = &changes.trigger
        else {
            panic!("inotify is available here");
        };
        assert_eq!(watched.iter().collect::<Vec<_>>(), [&packages.join("live")]);
        std::fs::write(deep.join("notes.md"), "z").unwrap();
        assert_quiet_past_a_poll(&mut changes, "a deep file").await;
    }

    /// `rm -r packages && mkdir packages`: the watch was on the directory
    /// that is gone; the new one must be watched.
    #[tokio::test]
    async fn a_directory_replaced_by_another_is_watched_in_its_place() {
        let (_dir, packages) = packages_dir();
        let mut changes = Changes::watch(&packages);
        std::fs::remove_dir(&packages).unwrap();
        std::fs::create_dir(&packages).unwrap();
        woken_by_the_watch(&mut changes, "the replacement").await;
        std::fs::create_dir(packages.join("live")).unwrap();
        woken_by_the_watch(&mut changes, "a package in the new directory").await;
    }

    #[tokio::test]
    async fn a_removed_directory_is_polled_and_watched_again_once_back() {
        let (_dir, packages) = packages_dir();
        let mut changes = Changes::watch(&packages);
        std::fs::remove_dir(&packages).unwrap();
        woken(&mut changes, "the removal").await;
        changes.next().await; // notices the watch is gone, waits one poll
        assert!(!changes.is_watching());
        std::fs::create_dir(&packages).unwrap();
        changes.next().await;
        assert!(changes.is_watching(), "watched again once it exists");
    }
}
