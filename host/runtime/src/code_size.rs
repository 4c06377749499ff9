//! The size of a component's code, read before compiling it.
//!
//! What a compiler spends grows with the function bodies it is given (and
//! faster than linearly with the largest ones); every core module's code
//! section counts, nested ones and ones no export reaches included, since
//! the compiler compiles them all. Reading the section headers costs a pass
//! over the bytes and no allocation per function.

use wasmparser::Payload;

use crate::error::{CompileLimit, RuntimeError};

/// Bytes of function bodies in `wasm`: the sum of its core modules' code
/// sections.
pub(crate) fn code_bytes(name: &str, wasm: &[u8]) -> Result<u64, RuntimeError> {
    let mut total = 0u64;
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        let payload = payload.map_err(|e| RuntimeError::Compile {
            component: name.to_owned(),
            reason: format!("{e}"),
        })?;
        if let Payload::CodeSectionStart { size, .. } = payload {
            total = total.saturating_add(u64::from(size));
        }
    }
    Ok(total)
}

/// Refuse `wasm` if its function bodies exceed `limit_bytes`.
pub(crate) fn check(name: &str, wasm: &[u8], limit_bytes: u64) -> Result<(), RuntimeError> {
    let actual_bytes = code_bytes(name, wasm)?;
    if actual_bytes > limit_bytes {
        return Err(RuntimeError::CompileLimitExceeded {
            component: name.to_owned(),
            limit: CompileLimit::CodeSize {
                actual_bytes,
                limit_bytes,
            },
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_section_counts_nested_ones_too() {
        let module = wat::parse_str(
            r#"(module (func (result i32) i32.const 1) (func (result i32) i32.const 2))"#,
        )
        .unwrap();
        let one = code_bytes("m", &module).unwrap();
        assert!(one > 0);
        // A component holding the module twice (as a compile bomb would
        // hold modules it never instantiates): the component header, then
        // two core module sections (id 1, LEB128 size, the module).
        let mut component = vec![0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
        for _ in 0..2 {
            component.push(1);
            let mut len = module.len();
            loop {
                let byte = (len & 0x7f) as u8;
                len >>= 7;
                if len == 0 {
                    component.push(byte);
                    break;
                }
                component.push(byte | 0x80);
            }
            component.extend_from_slice(&module);
        }
        assert_eq!(code_bytes("c", &component).unwrap(), 2 * one);
        assert!(check("c", &component, 2 * one).is_ok());
        let refused = check("c", &component, 2 * one - 1).unwrap_err();
        assert_eq!(refused.code(), "compile_limit_exceeded");
    }
}
