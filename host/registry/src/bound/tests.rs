use super::*;

fn bounder(dir: Option<&Path>, max_lines: usize, max_bytes: usize) -> OutputBounder {
    OutputBounder::new(BoundConfig {
        max_lines,
        max_bytes,
        spill_dir: dir.map(Path::to_owned),
        ..BoundConfig::default()
    })
}

#[test]
fn defaults_are_two_thousand_lines_and_fifty_kib() {
    let c = BoundConfig::default();
    assert_eq!((c.max_lines, c.max_bytes), (2_000, 51_200));
    let small = "ok\n".repeat(2_000);
    let out = OutputBounder::default().bound(&small).unwrap();
    assert!(!out.is_truncated());
    assert_eq!(out.text, small);
}

#[test]
fn long_outputs_keep_head_and_tail_and_say_what_was_cut() {
    let dir = tempfile::tempdir().unwrap();
    let output: String = (0..100).map(|i| format!("line {i}\n")).collect();
    let out = bounder(Some(dir.path()), 10, 10_000)
        .bound(&output)
        .unwrap();
    let t = out.truncation.clone().unwrap();
    assert!(out.text.starts_with("line 0\nline 1\n"));
    assert!(out.text.contains("line 4\n[... output truncated: 90 lines"));
    assert!(
        out.text
            .ends_with("line 95\nline 96\nline 97\nline 98\nline 99\n")
    );
    assert!(!out.text.contains("line 50\n"));
    assert_eq!((t.total_lines, t.omitted_lines), (100, 90));
    assert_eq!(t.total_bytes, output.len());
    let path = t.full_output.unwrap();
    assert!(out.text.contains(&path.display().to_string()));
    assert_eq!(fs::read_to_string(&path).unwrap(), output);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn byte_limit_cuts_on_character_boundaries() {
    let output = "é".repeat(1_000); // one line, 2,000 bytes
    let out = bounder(None, 100, 101).bound(&output).unwrap();
    let t = out.truncation.unwrap();
    assert!(out.text.contains("full output was not kept"));
    assert_eq!(t.omitted_bytes % 2, 0);
    assert!(t.total_bytes - t.omitted_bytes <= 101);
    assert!(out.text.starts_with("éé"));
}

#[test]
fn sweep_removes_only_expired_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let b = bounder(Some(dir.path()), 1, 1_000);
    let kept = b
        .bound("a\nb\nc\n")
        .unwrap()
        .truncation
        .unwrap()
        .full_output
        .unwrap();
    let old = dir.path().join("output-1-old.txt");
    fs::write(&old, "old").unwrap();
    let long_ago = SystemTime::now() - Duration::from_secs(30 * 24 * 3600);
    fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(long_ago)
        .unwrap();
    let unrelated = dir.path().join("notes.txt");
    fs::write(&unrelated, "mine").unwrap();
    assert_eq!(b.sweep(SystemTime::now()).unwrap(), 1);
    assert!(!old.exists());
    assert!(kept.exists());
    assert!(unrelated.exists());
}
