//! The package reader under attack: archive entries that aim outside the
//! package, links and devices, incomplete digest lists, and directories with
//! files too large to read.

use std::path::{Path, PathBuf};

use warden_host::{Host, HostConfig, HostError, PackageSource, load_package};
use warden_tests::archive::{self, Entry};

use crate::root;

fn host() -> Host {
    Host::builder(HostConfig::default()).build().expect("host")
}

fn echo_entries() -> Vec<Entry> {
    archive::read_entries(&root().join("target/packages/echo.tar.gz"))
}

/// The bundled echo archive plus `extra` entries, written to `dir/name`.
fn archive_with(dir: &Path, name: &str, extra: Vec<Entry>) -> PathBuf {
    let path = dir.join(name);
    let mut entries = echo_entries();
    entries.extend(extra);
    archive::write_raw(&path, &entries);
    path
}

/// The attack of issue 12: `.//<absolute path>` entries (one aimed at the
/// data dir's `warden.toml`) beside a valid package whose `SHA256SUMS`
/// leaves them out. Nothing may appear outside, and the package is refused.
#[test]
fn archive_entries_cannot_write_outside_the_package() {
    let scratch = tempfile::tempdir().unwrap();
    let data_dir = scratch.path().join("data");
    std::fs::create_dir_all(&data_dir).unwrap();
    let config = data_dir.join("warden.toml");
    std::fs::write(&config, "# the user's own settings\n").unwrap();
    let outside = scratch.path().join("outside");
    let host = host();
    let location = host.open_location("p");

    for name in [
        format!(".//{}", config.display()),
        format!(".//{}/pwned", outside.display()),
        format!("././/{}/pwned", outside.display()),
        format!(
            "wasm/../../{}/pwned",
            outside.file_name().unwrap().to_string_lossy()
        ),
        format!("{}/pwned", outside.display()),
    ] {
        let hostile = archive_with(
            scratch.path(),
            "hostile.tar.gz",
            vec![Entry::file(
                name.clone(),
                b"[egress]\nextra_ca = \"evil.pem\"\n".to_vec(),
            )],
        );
        let error = location
            .install(&PackageSource::Archive(hostile.clone()))
            .unwrap_err();
        assert!(
            matches!(error, HostError::UnsafeEntry { .. }),
            "{name}: {error}"
        );
        // Through the loader the CLI uses, too.
        let error = load_package(&PackageSource::Archive(hostile), host.validation()).unwrap_err();
        assert!(
            matches!(error, HostError::UnsafeEntry { .. }),
            "{name}: {error}"
        );
    }
    assert!(!outside.exists(), "nothing was written outside");
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "# the user's own settings\n",
        "warden.toml is untouched"
    );
    assert!(location.snapshot().lookup("echo_echo").is_none());
}

#[test]
fn archive_links_and_devices_are_refused() {
    let scratch = tempfile::tempdir().unwrap();
    for entry in [
        Entry::link("prompts/evil.md", tar::EntryType::Symlink, "/etc/passwd"),
        Entry::link("prompts/evil.md", tar::EntryType::Link, "/etc/passwd"),
        Entry::link("prompts/evil.md", tar::EntryType::Char, ""),
        Entry::link("prompts/evil.md", tar::EntryType::Fifo, ""),
    ] {
        let kind = entry.kind;
        let hostile = archive_with(scratch.path(), "links.tar.gz", vec![entry]);
        let error =
            load_package(&PackageSource::Archive(hostile), host().validation()).unwrap_err();
        assert!(
            matches!(error, HostError::UnsafeEntry { .. }),
            "{kind:?}: {error}"
        );
    }
}

/// Writing a loaded package joins only normal components, whatever a
/// caller put into `files`.
#[test]
fn writing_a_package_stays_under_its_directory() {
    let host = host();
    let archive = root().join("target/packages/echo.tar.gz");
    let mut loaded = load_package(&PackageSource::Archive(archive), host.validation()).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let outside = scratch.path().join("outside.txt");
    loaded
        .files
        .insert(outside.display().to_string(), b"pwned".to_vec());
    let staging = scratch.path().join("staging");
    let error = loaded.write_to(&staging).unwrap_err();
    assert!(matches!(error, HostError::UnsafeEntry { .. }), "{error}");
    assert!(!outside.exists());

    loaded.files.remove(&outside.display().to_string());
    // Into a directory that exists already (one planted with a link in it,
    // say), nothing is written.
    let planted = scratch.path().join("planted");
    std::fs::create_dir_all(planted.join("wasm")).unwrap();
    let error = loaded.write_to(&planted).unwrap_err();
    assert!(matches!(error, HostError::Io { .. }), "{error}");
    assert!(!planted.join("manifest.toml").exists());
    loaded.write_to(&scratch.path().join("ok")).unwrap();
    let copy = load_package(
        &PackageSource::Dir(scratch.path().join("ok")),
        host.validation(),
    )
    .unwrap();
    assert_eq!(copy.digest, loaded.digest, "the copy is the same package");
}

/// Rewrite the echo archive's `SHA256SUMS` with `edit`.
fn with_sums(dir: &Path, edit: impl Fn(&str) -> Option<String>) -> PathBuf {
    let path = dir.join("sums.tar.gz");
    let entries: Vec<Entry> = echo_entries()
        .into_iter()
        .filter_map(|mut e| {
            if e.name.trim_start_matches("./") == "SHA256SUMS" {
                e.bytes = edit(&String::from_utf8(e.bytes).unwrap())?.into_bytes();
            }
            Some(e)
        })
        .collect();
    archive::write_raw(&path, &entries);
    path
}

#[test]
fn archives_must_list_every_file_in_sha256sums() {
    let scratch = tempfile::tempdir().unwrap();
    let validation = host().validation().clone();
    let load = |path| load_package(&PackageSource::Archive(path), &validation).unwrap_err();

    let partial = with_sums(scratch.path(), |sums| {
        Some(
            sums.lines()
                .filter(|l| !l.ends_with("prompts/echo/echo.md"))
                .map(|l| format!("{l}\n"))
                .collect(),
        )
    });
    let error = load(partial);
    assert!(
        matches!(&error, HostError::NotInSums { path, .. } if path == "prompts/echo/echo.md"),
        "{error}"
    );
    assert!(
        error.to_string().contains("prompts/echo/echo.md"),
        "{error}"
    );

    for empty in [Some(String::new()), None] {
        let error = load(with_sums(scratch.path(), |_| empty.clone()));
        assert!(
            matches!(&error, HostError::NotInSums { path, .. } if path == "manifest.toml"),
            "{error}"
        );
    }

    let extra = with_sums(scratch.path(), |sums| {
        Some(format!("{sums}{}  prompts/gone.md\n", "0".repeat(64)))
    });
    let error = load(extra);
    assert!(
        matches!(&error, HostError::SumsNamesMissingFile { path, .. } if path == "prompts/gone.md"),
        "{error}"
    );
    assert!(error.to_string().contains("prompts/gone.md"), "{error}");
}

/// A copy of `packages/echo` without its digest list, to edit.
fn echo_dir(scratch: &Path) -> PathBuf {
    warden_tests::package::echo_variant(&scratch.join("echo"), &[])
}

/// Issue 12 item 5: a 2 GiB (sparse) prompt and a schema the manifest does
/// not reference are never opened or read, and are not part of the package
/// (nor is a link to `/etc/passwd` beside them). The kernel reports every
/// open and read of a file in `prompts/` and `schemas/` (inotify), so the
/// test sees what was read, not how long reading took.
#[cfg(target_os = "linux")]
#[test]
fn unreferenced_directory_files_are_never_read() {
    use rustix::fs::inotify::{self, CreateFlags, WatchFlags};

    let scratch = tempfile::tempdir().unwrap();
    let dir = echo_dir(scratch.path());
    let huge = std::fs::File::create(dir.join("prompts/huge.md")).unwrap();
    huge.set_len(2 << 30).unwrap();
    drop(huge);
    std::fs::write(dir.join("schemas/unused.json"), "{}").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", dir.join("schemas/passwd.json")).unwrap();
    let watch = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC).unwrap();
    for sub in ["prompts", "schemas"] {
        inotify::add_watch(&watch, dir.join(sub), WatchFlags::OPEN | WatchFlags::ACCESS).unwrap();
    }

    let loaded = load_package(&PackageSource::Dir(dir.clone()), host().validation()).unwrap();
    let touched = touched(&watch);
    for unreferenced in ["huge.md", "unused.json", "passwd.json"] {
        assert!(
            !touched.iter().any(|name| name == unreferenced),
            "{unreferenced} was opened or read: {touched:?}"
        );
    }
    let kept: Vec<&str> = loaded.files.keys().map(String::as_str).collect();
    assert_eq!(
        kept,
        [
            "manifest.toml",
            "prompts/echo/echo.md",
            "schemas/echo/echo.input.v1.json",
            "schemas/echo/echo.output.v1.json",
            "wasm/echo.wasm",
        ]
    );
    // The watch sees a read when there is one.
    let mut head = [0u8; 16];
    std::io::Read::read(
        &mut std::fs::File::open(dir.join("prompts/huge.md")).unwrap(),
        &mut head,
    )
    .unwrap();
    assert!(touched_now(&watch, "huge.md"), "the watch saw nothing");
}

/// The names of the files `watch` saw opened or read since it was last asked.
#[cfg(target_os = "linux")]
fn touched(watch: &rustix::fd::OwnedFd) -> Vec<String> {
    use rustix::fs::inotify::Reader;
    let mut buf = [std::mem::MaybeUninit::uninit(); 4096];
    let mut events = Reader::new(watch, &mut buf);
    let mut names = Vec::new();
    loop {
        match events.next() {
            Ok(event) => names.extend(
                event
                    .file_name()
                    .map(|name| name.to_string_lossy().into_owned()),
            ),
            Err(rustix::io::Errno::AGAIN) => return names,
            Err(error) => panic!("reading the watch: {error}"),
        }
    }
}

#[cfg(target_os = "linux")]
fn touched_now(watch: &rustix::fd::OwnedFd, name: &str) -> bool {
    touched(watch).iter().any(|n| n == name)
}

/// Sizes given in PAX headers (the entry's own header saying 0) count
/// against the whole archive's limit as any other: three files of 25 MiB
/// are over 64 MiB however their sizes are written.
#[test]
fn archive_sizes_in_pax_headers_count_against_the_limit() {
    let scratch = tempfile::tempdir().unwrap();
    let big = |i: usize| Entry::file(format!("prompts/big{i}.md"), vec![0u8; 25 << 20]);
    let entries: Vec<Entry> = (0..3).map(|i| big(i).with_pax_size()).collect();
    let path = archive_with(scratch.path(), "pax.tar.gz", entries);
    let loaded = load_package(&PackageSource::Archive(path), host().validation());
    let Err(error) = loaded else {
        panic!("an archive of 75 MiB loaded");
    };
    assert!(
        matches!(&error, HostError::TooLarge { limit, .. } if *limit == warden_host::MAX_PACKAGE_BYTES),
        "{error}"
    );
}

#[test]
fn referenced_directory_files_are_bounded() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = echo_dir(scratch.path());
    std::fs::File::create(dir.join("wasm/echo.wasm"))
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let error = load_package(&PackageSource::Dir(dir), host().validation()).unwrap_err();
    assert!(
        matches!(&error, HostError::TooLarge { path, limit, .. } if path == "wasm/echo.wasm" && *limit == warden_host::MAX_FILE_BYTES),
        "{error}"
    );
}

#[test]
fn directory_links_are_refused() {
    let scratch = tempfile::tempdir().unwrap();
    let prompt = "prompts/echo/echo.md";

    let dir = echo_dir(&scratch.path().join("symlink"));
    let secret = scratch.path().join("secret.md");
    std::fs::write(&secret, "a file outside the package").unwrap();
    std::fs::remove_file(dir.join(prompt)).unwrap();
    std::os::unix::fs::symlink(&secret, dir.join(prompt)).unwrap();
    let error = load_package(&PackageSource::Dir(dir), host().validation()).unwrap_err();
    assert!(matches!(error, HostError::UnsafeEntry { .. }), "{error}");

    let dir = echo_dir(&scratch.path().join("hardlink"));
    std::fs::remove_file(dir.join(prompt)).unwrap();
    std::fs::hard_link(&secret, dir.join(prompt)).unwrap();
    let error = load_package(&PackageSource::Dir(dir), host().validation()).unwrap_err();
    assert!(matches!(error, HostError::UnsafeEntry { .. }), "{error}");
}

/// A GNU long name is bounded only by the archive: one of 128 MiB took a
/// gigabyte to refuse (a lossy copy, then each byte escaped into the
/// error). A name past 4 KiB is refused as it is read, and shown cut short.
#[test]
fn an_entry_name_past_4_kib_is_refused_and_shown_short() {
    let host = host();
    let scratch = tempfile::tempdir().unwrap();
    let path = scratch.path().join("long.tar.gz");
    let file = std::fs::File::create(&path).unwrap();
    let mut out = tar::Builder::new(flate2::write::GzEncoder::new(
        file,
        flate2::Compression::fast(),
    ));
    let name = format!("{}/manifest.toml", "a".repeat(8000));
    let mut header = tar::Header::new_gnu();
    header.set_size(1);
    header.set_mode(0o644);
    out.append_data(&mut header, &name, &b"x"[..]).unwrap();
    out.into_inner().unwrap().finish().unwrap();

    let error = load_package(&PackageSource::Archive(path), host.validation()).unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, HostError::UnsafeEntry { .. }), "{text}");
    assert!(text.contains("name of 8014 bytes"), "{text}");
    assert!(text.len() < 600, "shown cut short: {} bytes", text.len());
    assert!(text.contains('…'), "said to be cut short: {text}");
}

/// A package's signature is read beside its `SHA256SUMS`, not through it:
/// it is held to its own bound (an archive's signature of 5 KiB is refused,
/// naming it) and read as any package file is (a link to a file outside
/// is refused, never followed).
#[test]
fn a_signature_is_bounded_and_never_followed_out_of_the_package() {
    let scratch = tempfile::tempdir().unwrap();
    let signature = warden_host::signature::SIGNATURE_FILE;
    let big = Entry::file(signature, vec![b'a'; 5 << 10]);
    let path = archive_with(scratch.path(), "signed.tar.gz", vec![big]);
    let error = load_package(&PackageSource::Archive(path), host().validation()).unwrap_err();
    assert!(
        matches!(&error, HostError::TooLarge { path, .. } if path == signature),
        "{error}"
    );

    let dir = echo_dir(&scratch.path().join("linked"));
    let outside = scratch.path().join("outside.minisig");
    std::fs::write(&outside, "untrusted comment: not the package's\n").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join(signature)).unwrap();
    let error = load_package(&PackageSource::Dir(dir), host().validation()).unwrap_err();
    assert!(matches!(error, HostError::UnsafeEntry { .. }), "{error}");
}

/// A package as a registry (or the shared store) hands it over, under
/// attack: the component layer names a path outside the package, or one of
/// the package layer's own files, or the layer is short of the component
/// its digest list names. Each is refused before anything is validated.
#[test]
fn an_artifact_s_component_cannot_leave_the_package_or_overwrite_its_files() {
    use std::sync::Arc;
    let host = host();
    let options = host.validation().clone();
    let loaded = load_package(
        &PackageSource::Archive(root().join("target/packages/echo.tar.gz")),
        &options,
    )
    .unwrap();
    let artifact = loaded.artifact().unwrap();
    let (path, module) = artifact.module.clone().unwrap();
    assert_eq!(path, "wasm/echo.wasm");
    // As published, it loads with the same content digest.
    let again = load_package(&PackageSource::Stored(Arc::new(artifact.clone())), &options).unwrap();
    assert_eq!(again.digest, loaded.digest);

    let with_path = |title: &str| {
        let mut hostile = artifact.clone();
        hostile.module = Some((title.to_owned(), module.clone()));
        // Only whether and why it was refused matters here.
        load_package(&PackageSource::Stored(Arc::new(hostile)), &options)
            .map(|p| p.digest)
            .map_err(Box::new)
    };
    for title in [
        "../echo.wasm",
        "/etc/passwd",
        "wasm/../../x.wasm",
        "wasm//echo.wasm",
    ] {
        let error = with_path(title).unwrap_err();
        assert!(
            matches!(*error, HostError::UnsafeEntry { .. }),
            "{title}: {error}"
        );
    }
    let error = with_path("manifest.toml").unwrap_err();
    assert!(
        matches!(&*error, HostError::UnsafeEntry { reason, .. } if reason.contains("package layer has too")),
        "{error}"
    );
    // A component at another path than its digest list names: the listed
    // one is missing, this one unlisted.
    assert!(with_path("wasm/other.wasm").is_err());
    let mut bare = artifact.clone();
    bare.module = None;
    assert!(load_package(&PackageSource::Stored(Arc::new(bare)), &options).is_err());
}
