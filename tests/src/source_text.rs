//! Reading the crate's own sources and docs, for the tests that check the
//! floor plan (`tests/layering.rs`) and that the docs agree with the code
//! (`tests/docs_agree.rs`): files, module paths, code with its comments
//! and strings blanked out, comments alone, cited paths, file tables.

use std::path::{Path, PathBuf};

pub fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../executor/src")
}

/// Every `.rs` file under `dir`, as paths relative to `root`.
pub fn rust_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path.strip_prefix(root).unwrap().to_path_buf());
        }
    }
}

/// The module path of a file: `sleep/mod.rs` is `["sleep"]`,
/// `scheduler/worker/search.rs` is `["scheduler", "worker", "search"]`,
/// `lib.rs` is `[]`.
pub fn module_path(file: &Path) -> Vec<String> {
    let mut parts: Vec<String> = file
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The code of `src` with comments, string and char literals blanked out
/// (replaced by spaces, so that offsets and line numbers stay).
pub fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            let end = src[i..].find('\n').map_or(b.len(), |n| i + n);
            blank(&mut out, i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let end = src[i..].find("*/").map_or(b.len(), |n| i + n + 2);
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'r' && (b[i + 1..].starts_with(b"\"") || b[i + 1..].starts_with(b"#")) {
            // A raw string: r"..." or r#"..."#.
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            if b.get(i + 1 + hashes) != Some(&b'"') || (i > 0 && is_ident(b[i - 1])) {
                i += 1;
                continue;
            }
            let close = format!("\"{}", "#".repeat(hashes));
            let body = i + 2 + hashes;
            let end = src[body..]
                .find(&close)
                .map_or(b.len(), |n| body + n + close.len());
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, (j + 1).min(b.len()));
            i = j + 1;
        } else if b[i] == b'\'' && (b.get(i + 1) == Some(&b'\\') || b.get(i + 2) == Some(&b'\'')) {
            // A char literal ('x', '\n', '\''); a lifetime has no closing quote.
            let mut j = i + 1;
            while j < b.len() && b[j] != b'\'' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, (j + 1).min(b.len()));
            i = j + 1;
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

pub fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The identifier at the start of `s`.
pub fn ident(s: &str) -> &str {
    let n = s.bytes().take_while(|&c| is_ident(c)).count();
    &s[..n]
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The files under each of `dirs` (relative to the repo root, `target/`
/// skipped) that `keep(dir, name)` keeps, as sorted paths relative to the
/// repo root.
pub fn repo_files(dirs: &[&str], keep: impl Fn(&str, &str) -> bool) -> Vec<PathBuf> {
    let root = repo_root();
    let mut out = Vec::new();
    for &dir in dirs {
        let mut stack = vec![root.join(dir)];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries {
                let path = e.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if path.is_dir() {
                    if name != "target" {
                        stack.push(path);
                    }
                } else if keep(dir, &name) {
                    out.push(path.strip_prefix(&root).unwrap().to_path_buf());
                }
            }
        }
    }
    out.sort();
    out
}

/// The docs a reader follows: docs/*.md, the README at the root and every
/// README beside the code (as paths relative to the repo root).
pub fn doc_files() -> Vec<PathBuf> {
    let dirs = [
        "docs",
        "executor/src",
        "macros",
        "benches",
        "examples",
        "tests",
    ];
    let mut docs = repo_files(&dirs, |dir, name| {
        name == "README.md" || (dir == "docs" && name.ends_with(".md"))
    });
    docs.insert(0, PathBuf::from("README.md"));
    docs
}

/// The backticked paths in `text` (a Rust file, or a `.md` file or a
/// folder with a `/` in its path), with their lines.
pub fn backticked_rs_paths(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut parts = line.split('`');
        parts.next();
        while let (Some(inside), _) = (parts.next(), parts.next()) {
            // A Rust file, or a doc or folder of ours cited by its path.
            let cited = inside.ends_with(".rs")
                || (inside.contains('/')
                    && (inside.ends_with(".md") || inside.ends_with('/'))
                    && !inside.starts_with('/')
                    && !inside.contains("://"));
            let looks_like_path = inside.len() > ".rs".len()
                && cited
                && !inside.contains(' ')
                && inside
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
            if looks_like_path {
                out.push((n + 1, inside.to_string()));
            }
        }
    }
    out
}

/// Other projects' files that the docs cite (Rayon's, tokio's, ...): named
/// for the reader to look up, not files of ours.
pub const OTHER_PROJECTS: &[&str] = &[
    "rayon-core/",
    "rayon/",
    "tokio/",
    "src/runtime/",
    "src/loom/",
    "crossbeam-deque/",
    "async-task/",
    "async-executor/",
];

/// Does `path`, cited in the doc at `doc` (relative to the repo root),
/// name a file of the repo? It may be relative to the doc's folder, to the
/// repo root, to `executor/src` or to the doc's package. A bare `mod.rs` or
/// `lib.rs` is a kind of file, not a citation.
pub fn cited_file_exists(doc: &Path, path: &str) -> bool {
    let root = repo_root();
    let here = root.join(doc.parent().unwrap_or(Path::new("")));
    // The citing file's package (`tests/`, `examples/`, ...).
    let package = root.join(doc.iter().next().unwrap_or_default());
    [here, root.clone(), root.join("executor/src"), package]
        .iter()
        .any(|base| {
            let cited = base.join(path);
            if path.ends_with('/') {
                cited.is_dir()
            } else {
                cited.is_file()
            }
        })
}

/// Every Rust file of the workspace's own code (not `target/`), relative to
/// the repo root.
pub fn workspace_rust_files() -> Vec<PathBuf> {
    let dirs = ["executor", "macros", "benches", "examples", "tests"];
    repo_files(&dirs, |_, name| name.ends_with(".rs"))
}

/// The comments of Rust source `src` (`//`, `///`, `//!`), each line
/// blanked elsewhere so that line numbers stay.
pub fn comments_of(src: &str) -> String {
    // Where a line's comment starts: the first `//` outside a string.
    let comment_start = |l: &str| {
        let b = l.as_bytes();
        let (mut in_string, mut k) = (false, 0);
        while k < b.len() {
            match b[k] {
                b'\\' if in_string => k += 1,
                b'"' => in_string = !in_string,
                b'/' if !in_string && b.get(k + 1) == Some(&b'/') => return Some(k),
                _ => {}
            }
            k += 1;
        }
        None
    };
    src.lines()
        .map(|l| comment_start(l).map_or("", |at| &l[at..]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The file tables of `text` (markdown, or a `mod.rs`'s `//!` docs): for
/// each table whose header's first cell is `file`, the backticked names of
/// its rows' first cells.
pub fn file_tables(text: &str) -> Vec<Vec<String>> {
    let mut tables = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in text.lines() {
        let line = line.trim_start().trim_start_matches("//!").trim();
        if !line.starts_with('|') {
            if let Some(t) = current.take() {
                tables.push(t);
            }
            continue;
        }
        let first = line.split('|').nth(1).unwrap_or("").trim();
        match current.as_mut() {
            None if first == "file" => current = Some(Vec::new()),
            None => {}
            Some(rows) => {
                let mut parts = first.split('`');
                parts.next();
                while let (Some(name), _) = (parts.next(), parts.next()) {
                    rows.push(name.to_string());
                }
            }
        }
    }
    tables.extend(current);
    tables
}
