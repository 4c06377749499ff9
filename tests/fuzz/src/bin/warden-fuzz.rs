//! The binary `afl-fuzz` runs: `warden-fuzz <target>`, one input per
//! iteration in AFL's persistent mode.

fn main() {
    let name = std::env::args().nth(1).unwrap_or_default();
    let Some(target) = warden_fuzz::target(&name) else {
        let names: Vec<&str> = warden_fuzz::TARGETS.iter().map(|t| t.name).collect();
        eprintln!("usage: warden-fuzz <target>; targets: {}", names.join(", "));
        std::process::exit(2);
    };
    afl::fuzz!(|data: &[u8]| (target.run)(data));
}
