//! Package archives as an attacker writes them: entry names and types are
//! written into the tar header byte for byte, with none of the checks the
//! `tar` crate applies when it builds an archive.

use std::io::Read;
use std::path::Path;

/// One archive entry.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The name exactly as it goes into the header (at most 100 bytes).
    pub name: String,
    /// The contents.
    pub bytes: Vec<u8>,
    /// Regular file, symlink, hard link, device...
    pub kind: tar::EntryType,
    /// The link target of a symlink or hard link.
    pub link: Option<String>,
    /// The size given only in a PAX extended header before the entry; its
    /// own header says 0 (a reader takes the PAX size).
    pub pax_size: bool,
}

impl Entry {
    /// A regular file.
    pub fn file(name: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        Entry {
            name: name.into(),
            bytes: bytes.into(),
            kind: tar::EntryType::Regular,
            link: None,
            pax_size: false,
        }
    }

    /// This entry with its size given only in a PAX header.
    pub fn with_pax_size(self) -> Self {
        Entry {
            pax_size: true,
            ..self
        }
    }

    /// A link entry (`tar::EntryType::Symlink` or `Link`) to `target`.
    pub fn link(name: impl Into<String>, kind: tar::EntryType, target: &str) -> Self {
        Entry {
            name: name.into(),
            bytes: Vec::new(),
            kind,
            link: Some(target.to_owned()),
            pax_size: false,
        }
    }
}

/// The regular-file entries of a `.tar.gz`.
pub fn read_entries(archive: &Path) -> Vec<Entry> {
    let file = std::fs::File::open(archive).expect("open archive");
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    tar.entries()
        .expect("entries")
        .map(|entry| {
            let mut entry = entry.expect("entry");
            let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).expect("read entry");
            Entry::file(name, bytes)
        })
        .collect()
}

/// Write `entries` to a `.tar.gz` at `path`, names unchecked.
pub fn write_raw(path: &Path, entries: &[Entry]) {
    let file = std::fs::File::create(path).expect("create archive");
    let mut out = tar::Builder::new(flate2::write::GzEncoder::new(
        file,
        flate2::Compression::fast(),
    ));
    for entry in entries {
        let mut header = tar::Header::new_gnu();
        let name = entry.name.as_bytes();
        assert!(name.len() < 100, "test entry names fit the header");
        header.as_gnu_mut().expect("gnu").name[..name.len()].copy_from_slice(name);
        if let Some(link) = &entry.link {
            let link = link.as_bytes();
            header.as_gnu_mut().expect("gnu").linkname[..link.len()].copy_from_slice(link);
        }
        header.set_entry_type(entry.kind);
        let size = entry.bytes.len() as u64;
        if entry.pax_size {
            let size = size.to_string();
            out.append_pax_extensions([("size", size.as_bytes())])
                .expect("pax header");
            header.set_size(0);
        } else {
            header.set_size(size);
        }
        header.set_mode(0o644);
        header.set_cksum();
        out.append(&header, entry.bytes.as_slice()).expect("append");
    }
    out.into_inner().expect("finish").finish().expect("gzip");
}
