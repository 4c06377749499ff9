//! An echo tool for Wassette, doing what Warden's bundled `echo` does, so
//! that `bench-mcp --cold --wassette` compares the two hosts on the same work.

wit_bindgen::generate!({ world: "echo", path: "wit" });

struct Echo;

impl Guest for Echo {
    fn echo(text: String, transform: String) -> String {
        match transform.as_str() {
            "upper" => text.to_uppercase(),
            "lower" => text.to_lowercase(),
            "reverse" => text.chars().rev().collect(),
            _ => text,
        }
    }
}

export!(Echo);
