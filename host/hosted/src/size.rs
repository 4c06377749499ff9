//! The size of a tool result as JSON, measured without writing out the
//! megabytes of base64 an image or audio block may carry.

use rmcp::model::{CallToolResult, ContentBlock};

/// The base64 data of each image and audio block of `result`, taken out
/// (`None` for other blocks), and the size of `result` as JSON with it.
pub(crate) fn take_data_and_measure(result: &mut CallToolResult) -> (Vec<Option<String>>, usize) {
    let data: Vec<Option<String>> = result.content.iter_mut().map(take_data).collect();
    let bytes = json_len(result) + data.iter().flatten().map(|d| string_len(d)).sum::<usize>();
    (data, bytes)
}

/// The size of `value` as JSON, counted as it is written out (an answer
/// may carry megabytes of base64: no copy of it is made to be measured).
fn json_len(value: &(impl serde::Serialize + ?Sized)) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value).map_or(usize::MAX, |()| count.0)
}

/// The base64 data of an image or audio block, taken out of it.
fn take_data(block: &mut ContentBlock) -> Option<String> {
    match block {
        ContentBlock::Image(image) => Some(std::mem::take(&mut image.data)),
        ContentBlock::Audio(audio) => Some(std::mem::take(&mut audio.data)),
        _ => None,
    }
}

/// What `text` adds to the size of a JSON document in place of an empty
/// string. Text with nothing JSON escapes (base64 never has) is counted by
/// its length; other text is written out to be counted.
fn string_len(text: &str) -> usize {
    let plain = |b: u8| (b >= 0x20) & (b != b'"') & (b != b'\\');
    if text.bytes().fold(true, |all, b| all & plain(b)) {
        text.len()
    } else {
        json_len(text) - 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size counted with the data taken out is the size written out.
    #[test]
    fn a_result_is_measured_as_it_would_be_written() {
        for data in ["iVBORw0KGgo=", "not \"base64\"\n\u{7}", ""] {
            let mut result = CallToolResult::success(vec![
                ContentBlock::text("a \"quoted\" text"),
                ContentBlock::image(data, "image/png"),
                ContentBlock::audio(data.repeat(3), "audio/wav"),
            ]);
            let written = serde_json::to_vec(&result).unwrap().len();
            let taken: Vec<Option<String>> = result.content.iter_mut().map(take_data).collect();
            let counted = json_len(&result)
                + taken
                    .iter()
                    .flatten()
                    .map(String::as_str)
                    .map(string_len)
                    .sum::<usize>();
            assert_eq!(counted, written, "{data:?}");
        }
    }
}
