//! The tape format (`Tape::from_json`): a tape that parses round-trips
//! through `to_json` and `from_json` to the same tape and the same text.

use warden_egress::tape::Tape;

pub fn run(data: &[u8]) {
    let Ok(tape) = Tape::from_json(data) else {
        return;
    };
    let json = tape.to_json();
    let again = Tape::from_json(json.as_bytes())
        .unwrap_or_else(|e| panic!("a parsed tape's own JSON is refused: {e}\n{json}"));
    assert_eq!(again, tape, "the tape changed through its JSON");
    assert_eq!(again.to_json(), json, "the JSON of a tape is not stable");
}
