//! The package/archive reader (`warden_host::load_package` on an archive):
//! the input is a tar stream, gzipped by the harness (AFL mutates the tar,
//! not the compressed bytes). A package that loads keeps only normal names
//! and exactly the files its `SHA256SUMS` lists, with matching digests; a
//! refusal shows an entry name cut short.

use super::archive::{check_loaded, check_refusal, load_tar};

pub fn run(data: &[u8]) {
    match load_tar(data) {
        Ok(loaded) => {
            check_loaded(&loaded);
            // Every kept file was in the archive, under that name, with those bytes.
            let mut archive = tar::Archive::new(data);
            let mut found = 0;
            for entry in archive.entries().expect("a tar that loaded is a tar") {
                let mut entry = entry.expect("a tar that loaded is a tar");
                let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
                let name = name.strip_prefix("./").unwrap_or(&name).to_owned();
                if let Some(kept) = loaded.files.get(&name)
                    && name != "SHA256SUMS"
                {
                    let mut bytes = Vec::new();
                    std::io::Read::read_to_end(&mut entry, &mut bytes).expect("entry bytes");
                    assert_eq!(&bytes, kept, "`{name}` kept with other bytes");
                    found += 1;
                }
            }
            assert_eq!(
                found,
                loaded.files.len() - 1,
                "kept a file not in the archive"
            );
        }
        Err(error) => check_refusal(&error),
    }
}
