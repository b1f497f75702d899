//! The docs agree with the code: every Rust file a doc or a comment cites
//! exists, every folder's file table lists exactly its files, and the
//! sentences that state a fact the code decides (a type's file, a path to
//! an item, a distance between floors, how many ways the loom models' teeth
//! are checked) state it as the code has it. `tests/layering.rs` checks
//! the floors and writes the map of docs/ARCHITECTURE.md.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use tests::source_text::{
    backticked_rs_paths, cited_file_exists, code_only, comments_of, doc_files, file_tables, ident,
    is_ident, module_path, repo_root, rust_files, src_dir, workspace_rust_files, OTHER_PROJECTS,
};

/// Every text a reader meets, with where it is: the docs (but the lab
/// notebook of docs/BENCHMARKS-HISTORY.md, which names files as they were
/// then) and the comments of the workspace's code.
fn texts() -> Vec<(PathBuf, String)> {
    let root = repo_root();
    let mut texts: Vec<(PathBuf, String)> = Vec::new();
    for doc in doc_files() {
        if doc.ends_with("BENCHMARKS-HISTORY.md") {
            continue;
        }
        texts.push((
            doc.clone(),
            std::fs::read_to_string(root.join(&doc)).unwrap(),
        ));
    }
    // The comments of the code, doc comments first among them.
    for file in workspace_rust_files() {
        let src = std::fs::read_to_string(root.join(&file)).unwrap();
        texts.push((file, comments_of(&src)));
    }
    texts
}

/// `texts`, but for the floor-plan tests' own docs, which show made-up
/// crates' paths and claims.
fn claim_texts() -> Vec<(PathBuf, String)> {
    let mut texts = texts();
    texts.retain(|(doc, _)| {
        !doc.starts_with("tests/tests/layering.rs") && !doc.starts_with("tests/tests/docs_agree.rs")
    });
    texts
}

#[test]
fn every_rs_path_the_docs_cite_exists() {
    let mut missing = String::new();
    let texts = texts();
    for (doc, text) in texts {
        for (line, path) in backticked_rs_paths(&text) {
            if OTHER_PROJECTS.iter().any(|p| path.starts_with(p))
                || ["mod.rs", "lib.rs"].contains(&path.as_str())
            {
                continue;
            }
            if !cited_file_exists(&doc, &path) {
                writeln!(missing, "{}:{line}: `{path}`", doc.display()).unwrap();
            }
        }
    }
    assert!(
        missing.is_empty(),
        "the docs and comments cite files that do not exist (a path is read relative to the \
         citing file's folder, the repo root or executor/src): rename the citation, or the \
         file back:\n{missing}"
    );
}

#[test]
fn every_folder_file_table_lists_exactly_its_files() {
    let src = src_dir();
    let mut problems = String::new();
    let mut folders = vec![src.clone()];
    let mut i = 0;
    while i < folders.len() {
        let dir = folders[i].clone();
        i += 1;
        let mut files = Vec::new();
        let mut subfolders = Vec::new();
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                subfolders.push(name);
                folders.push(path);
            } else if name.ends_with(".rs") {
                files.push(name);
            }
        }
        if dir == src {
            continue; // the crate root: lib.rs's module list, the architecture map
        }
        let shown = format!("executor/src/{}", dir.strip_prefix(&src).unwrap().display());
        let mut sources = Vec::new();
        let readme = dir.join("README.md");
        if let Ok(text) = std::fs::read_to_string(&readme) {
            let tables = file_tables(&text);
            if tables.is_empty() {
                writeln!(
                    problems,
                    "{shown}/README.md: no file table (`| file | what |`)"
                )
                .unwrap();
            }
            sources.extend(
                tables
                    .into_iter()
                    .map(|t| (format!("{shown}/README.md"), t)),
            );
        }
        if let Ok(text) = std::fs::read_to_string(dir.join("mod.rs")) {
            sources.extend(
                file_tables(&text)
                    .into_iter()
                    .map(|t| (format!("{shown}/mod.rs"), t)),
            );
        }
        for (from, table) in sources {
            for f in &files {
                if !table.contains(f) {
                    writeln!(problems, "{from}: the file table does not list `{f}`").unwrap();
                }
            }
            for sub in &subfolders {
                if !table.iter().any(|t| t.starts_with(&format!("{sub}/"))) {
                    writeln!(problems, "{from}: the file table does not list `{sub}/`").unwrap();
                }
            }
            for entry in &table {
                let outside = entry.starts_with("../");
                if !outside && !entry.ends_with('/') && !dir.join(entry).is_file() {
                    writeln!(
                        problems,
                        "{from}: the file table lists `{entry}`, not a file here"
                    )
                    .unwrap();
                }
                if outside && !dir.join(entry).exists() {
                    writeln!(
                        problems,
                        "{from}: the file table lists `{entry}`, which is gone"
                    )
                    .unwrap();
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "a folder's file table (in its README.md or its mod.rs docs) says what the folder \
         no longer holds:\n{problems}"
    );
}

/// The doc checks themselves: a cited path and a file table are read.
#[test]
fn the_doc_checks_read_paths_and_tables() {
    let text = "see `scheduler/spawn.rs` and `Registry::spawn`, not `a b.rs`";
    assert_eq!(
        backticked_rs_paths(text),
        [(1, "scheduler/spawn.rs".to_string())]
    );
    let doc = "//! | file | what |\n//! |---|---|\n//! | `a.rs`, `../b.rs` | x |\n//! | `c/` | y |\n\ntext";
    assert_eq!(file_tables(doc), [vec!["a.rs", "../b.rs", "c/"]]);
    let rust = "//! see `io/driver.rs`\nlet s = \"`not/a.rs`\"; // and `x/y.rs`\n";
    assert_eq!(
        backticked_rs_paths(&comments_of(rust)),
        [(1, "io/driver.rs".to_string()), (2, "x/y.rs".to_string())]
    );
}

/// The items of executor/src, read from its code: which module file
/// defines which names, and which names each type's blocks hold.
struct CrateItems {
    /// Each file's module path (`["scheduler", "registry"]`) and code
    /// (comments and strings blanked out).
    files: Vec<(Vec<String>, String)>,
    /// Every `impl`, `trait`, `enum` and `struct` block of the crate: its
    /// keyword, its header and its body.
    blocks: Vec<(&'static str, String, String)>,
    /// The crate's type names (structs, enums, traits, unions).
    types: std::collections::BTreeSet<String>,
    /// Imports under another name: (name, alias).
    aliases: Vec<(String, String)>,
}

/// Keywords that define a named item.
const ITEM_KEYWORDS: &[&str] = &[
    "fn", "struct", "enum", "trait", "type", "const", "static", "mod", "union",
];

/// Standard library modules (and crates) whose names our top-level modules
/// share (`io::Error`, `task::Waker`, `hyper::service::Service`): a path of
/// one of them that does not resolve in the crate is read as theirs.
const STD_NAMES: &[&str] = &[
    "io", "time", "task", "net", "fs", "sync", "process", "thread", "signal", "hyper",
];

/// Does `code` have `word` at `at`, with no identifier character on either
/// side?
fn word_at(code: &str, at: usize, word: &str) -> bool {
    let b = code.as_bytes();
    (at == 0 || !is_ident(b[at - 1])) && !b.get(at + word.len()).is_some_and(|&c| is_ident(c))
}

/// The positions where `word` stands alone in `code`.
fn words<'a>(code: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    code.match_indices(word)
        .map(|(at, _)| at)
        .filter(move |&at| word_at(code, at, word))
}

/// The end of the `{ .. }` block that opens at or after `from` (its
/// closing brace's index).
fn block_end(code: &str, open: usize) -> usize {
    let mut level = 0;
    for (k, c) in code[open..].char_indices() {
        match c {
            '{' => level += 1,
            '}' => {
                level -= 1;
                if level == 0 {
                    return open + k;
                }
            }
            _ => {}
        }
    }
    code.len()
}

impl CrateItems {
    fn read() -> CrateItems {
        let root = src_dir();
        let mut paths = Vec::new();
        rust_files(&root, &root, &mut paths);
        let files = paths
            .iter()
            .map(|p| {
                let code = code_only(&std::fs::read_to_string(root.join(p)).unwrap());
                (module_path(p), code)
            })
            .collect::<Vec<(Vec<String>, String)>>();
        let mut blocks = Vec::new();
        for (_, code) in &files {
            for kw in ["impl", "trait", "enum", "struct"] {
                for at in words(code, kw) {
                    let Some(open) = code[at..].find(['{', ';']).map(|n| at + n) else {
                        continue;
                    };
                    if code.as_bytes()[open] == b'{' {
                        let body = code[open..block_end(code, open)].to_string();
                        blocks.push((kw, code[at..open].to_string(), body));
                    }
                }
            }
        }
        let mut types = std::collections::BTreeSet::new();
        let mut aliases = Vec::new();
        for (_, code) in &files {
            for kw in ["struct", "enum", "trait", "union"] {
                for at in words(code, kw) {
                    types.insert(ident(code[at + kw.len()..].trim_start()).to_string());
                }
            }
            for (at, _) in code.match_indices(" as ") {
                let before = code[..at].rsplit(|c: char| !c.is_ascii_alphanumeric() && c != '_');
                let name = before.into_iter().next().unwrap_or("");
                let alias = ident(&code[at + 4..]);
                if !name.is_empty() && !alias.is_empty() {
                    aliases.push((name.to_string(), alias.to_string()));
                }
            }
        }
        CrateItems {
            files,
            blocks,
            types,
            aliases,
        }
    }

    fn module(&self, path: &[String]) -> Option<&str> {
        self.files
            .iter()
            .find(|(m, _)| m[..] == *path)
            .map(|(_, code)| code.as_str())
    }

    /// Does `code` define `name` (an item, a macro, or a re-export of one)?
    fn defines(code: &str, name: &str) -> bool {
        words(code, name).any(|at| {
            let before = code[..at].trim_end();
            ITEM_KEYWORDS
                .iter()
                .any(|k| before.ends_with(k) && word_at(before, before.len() - k.len(), k))
                || before.ends_with("macro_rules!")
                || {
                    // A `use` that names it: a re-export, or the module's own
                    // import of what it hands on.
                    let line_start = code[..at].rfind('\n').map_or(0, |n| n + 1);
                    let line = code[line_start..].trim_start();
                    line.starts_with("pub") && line.contains("use ")
                }
        })
    }

    /// Is `name` a type (struct, enum, trait or union) of the crate? (An
    /// alias, `Runnable` of async-task's, is another crate's type.)
    fn is_type(&self, name: &str) -> bool {
        self.types.contains(name)
    }

    /// `ty` and the names it is imported under (`Builder as TaskBuilder`).
    fn names_of(&self, ty: &str) -> Vec<String> {
        let mut names = vec![ty.to_string()];
        names.extend(
            self.aliases
                .iter()
                .filter(|(name, _)| name == ty)
                .map(|(_, alias)| alias.clone()),
        );
        names
    }

    /// Does a block of type `ty` (its `impl`s, its trait, its enum's
    /// variants, its struct's fields) hold `member`?
    fn has_member(&self, ty: &str, member: &str) -> bool {
        let names = self.names_of(ty);
        self.blocks.iter().any(|(kw, header, body)| {
            names.iter().any(|n| words(header, n).next().is_some())
                && words(body, member).any(|m| {
                    let before = body[..m].trim_end();
                    let after = body[m + member.len()..].trim_start();
                    ITEM_KEYWORDS.iter().any(|k| before.ends_with(k))
                        || (matches!(*kw, "enum" | "struct")
                            && after.starts_with([',', '(', '{', ':', '=', '}']))
                })
        })
    }

    /// Why the Rust path `path` (as a doc wrote it) names nothing, or
    /// `None` if it names an item, a module, or something outside the crate.
    fn unresolved(&self, path: &str) -> Option<String> {
        let path = path.trim_end_matches("()");
        let path = path
            .strip_prefix("crate::")
            .or_else(|| path.strip_prefix("pool::"))
            .unwrap_or(path);
        let segs: Vec<String> = path.split("::").map(String::from).collect();
        let first = segs.first()?;
        if first == "Self" || first == "super" {
            return None;
        }
        if first.starts_with(|c: char| c.is_ascii_uppercase()) {
            // `Type::member`.
            let [ty, member] = &segs[..] else {
                return None;
            };
            return (self.is_type(ty) && !self.has_member(ty, member))
                .then(|| format!("no `{member}` in any block of `{ty}`"));
        }
        // The longest prefix that is a module of the crate.
        let k = (1..=segs.len())
            .rev()
            .find(|&k| self.module(&segs[..k]).is_some())?;
        let rest = &segs[k..];
        let Some(name) = rest.first() else {
            return None; // a module
        };
        let code = self.module(&segs[..k]).unwrap();
        if !Self::defines(code, name) {
            if k == 1 && STD_NAMES.contains(&first.as_str()) {
                return None; // std's (`io::Error`)
            }
            return Some(format!("`{}` defines no `{name}`", segs[..k].join("::")));
        }
        if let [ty, member] = rest {
            if self.is_type(ty) && !self.has_member(ty, member) {
                return Some(format!("no `{member}` in any block of `{ty}`"));
            }
        }
        None
    }
}

/// The backticked spans of `text` that look like Rust paths (`a::B`,
/// `Type::method`, `crate::x::y`), with their lines.
fn backticked_rust_paths(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut parts = line.split('`');
        parts.next();
        while let (Some(inside), _) = (parts.next(), parts.next()) {
            let span = inside.trim_end_matches("()");
            let segs: Vec<&str> = span.split("::").collect();
            let looks_like_path = segs.len() >= 2
                && segs.iter().all(|s| {
                    !s.is_empty()
                        && s.bytes().all(is_ident)
                        && !s.starts_with(|c: char| c.is_ascii_digit())
                });
            if looks_like_path {
                out.push((n + 1, inside.to_string()));
            }
        }
    }
    out
}

/// Every backticked Rust path a doc or a comment names is an item of the
/// crate: a path to the console's old Serve trait cannot outlive its file,
/// nor a method its rename.
#[test]
fn the_rust_paths_the_docs_name_resolve() {
    let items = CrateItems::read();
    let mut problems = String::new();
    for (doc, text) in claim_texts() {
        // The other packages' comments name their own types.
        let ours = doc.starts_with("executor") || doc.extension().is_some_and(|e| e == "md");
        if !ours {
            continue;
        }
        for (line, path) in backticked_rust_paths(&text) {
            if let Some(why) = items.unresolved(&path) {
                writeln!(problems, "{}:{line}: `{path}`: {why}", doc.display()).unwrap();
            }
        }
    }
    assert!(
        problems.is_empty(),
        "the docs and comments name Rust items the crate does not have (a path is read from \
         the crate root, `pool::` as `crate::`; `Type::member` from any block of the type): \
         name them as the code does:\n{problems}"
    );
}

/// A type cited with a file of executor/src beside it, in the form
/// backtick-name-backtick then the file in parentheses, is defined in that
/// file: a sentence cannot place the light calls in the wrong file.
#[test]
fn a_type_cited_with_its_file_is_defined_there() {
    let root = repo_root();
    let mut problems = String::new();
    for (doc, text) in claim_texts() {
        for (n, line) in text.lines().enumerate() {
            let mut rest = line;
            while let Some(at) = rest.find("` (`") {
                let before = &rest[..at];
                let name = before.rsplit('`').next().unwrap_or("");
                let after = &rest[at + "` (`".len()..];
                let file = after.split('`').next().unwrap_or("");
                rest = &rest[at + 1..];
                let is_type = name.starts_with(|c: char| c.is_ascii_uppercase())
                    && name.bytes().all(is_ident);
                if !is_type || !file.ends_with(".rs") || file.contains(' ') {
                    continue;
                }
                // Only the crate's own files define its types; an example
                // cited beside a type shows its use.
                let here = root.join(doc.parent().unwrap_or(Path::new("")));
                let Some(code) = [here, root.clone(), src_dir()]
                    .iter()
                    .map(|base| base.join(file))
                    .filter(|f| {
                        f.starts_with(src_dir())
                            || f.canonicalize()
                                .is_ok_and(|c| c.starts_with(src_dir().canonicalize().unwrap()))
                    })
                    .find_map(|f| std::fs::read_to_string(f).ok())
                else {
                    continue; // a missing file is every_rs_path_the_docs_cite_exists's
                };
                if !CrateItems::defines(&code_only(&code), name) {
                    writeln!(
                        problems,
                        "{}:{}: `{name}` (`{file}`): that file defines no `{name}`",
                        doc.display(),
                        n + 1
                    )
                    .unwrap();
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "the docs cite a type with a file that does not define it:\n{problems}"
    );
}

/// The floor of each top-level module, as the layering test's floor table
/// has it (`tests/layering.rs`, `FLOORS`): read from docs/ARCHITECTURE.md's
/// floor table, the one both check.
fn floors() -> Vec<(String, u8)> {
    let doc = std::fs::read_to_string(repo_root().join("docs/ARCHITECTURE.md")).unwrap();
    let mut out = Vec::new();
    for line in doc.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Some(floor) = cells.get(1).and_then(|c| c.parse::<u8>().ok()) else {
            continue;
        };
        let mut parts = cells[2].split('`');
        parts.next();
        while let (Some(name), _) = (parts.next(), parts.next()) {
            let module = name.trim_end_matches('/').trim_end_matches(".rs");
            out.push((module.to_string(), floor));
        }
    }
    out
}

const NUMBERS: &[&str] = &[
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen",
];

/// The number a word names (`a` is one).
fn number(word: &str) -> Option<usize> {
    let w = word.to_ascii_lowercase();
    if w == "a" || w == "an" {
        return Some(1);
    }
    NUMBERS
        .iter()
        .position(|n| *n == w)
        .or_else(|| w.parse().ok())
}

/// A sentence that says how many floors apart two folders are names them
/// ("`io/` is four floors up", "`io/` is a floor above `scheduler/` and
/// `time/`"), and says it as the floor table has it.
#[test]
fn a_distance_between_floors_is_the_floor_tables() {
    let floors = floors();
    let floor_of = |m: &str| floors.iter().find(|(f, _)| f == m).map(|&(_, f)| f);
    assert!(
        floor_of("sleep") == Some(1) && floor_of("io").is_some(),
        "docs/ARCHITECTURE.md's floor table was not read: {floors:?}"
    );
    let mut problems = String::new();
    for (doc, text) in claim_texts() {
        // The floor of the text's own folder, for "`io/`, N floors up".
        let own = doc
            .strip_prefix("executor/src")
            .ok()
            .and_then(|p| p.iter().next())
            .and_then(|m| floor_of(m.to_str()?.trim_end_matches(".rs")));
        let flat = text.replace(['\n', '/'], " ").replace("//!", " ");
        let flat = flat.split_whitespace().collect::<Vec<_>>().join(" ");
        let tokens: Vec<&str> = flat.split(' ').collect();
        for k in 0..tokens.len() {
            let t = tokens[k].trim_matches(|c: char| !c.is_ascii_alphanumeric());
            if !(t == "floor" || t == "floors") || k == 0 {
                continue;
            }
            let Some(n) = number(tokens[k - 1]) else {
                continue;
            };
            let dir = tokens
                .get(k + 1)
                .map(|d| d.trim_matches(|c: char| !c.is_ascii_alphabetic()));
            let up = match dir {
                Some("up" | "above") => true,
                Some("down" | "below") => false,
                _ => continue,
            };
            // The folder it is said of: the nearest backticked module
            // before, within the sentence.
            let module_in = |tok: &str| {
                let m = tok
                    .trim_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '`'));
                (m.starts_with('`') && m.len() > 2)
                    .then(|| m.trim_matches('`').to_string())
                    .filter(|m| floor_of(m).is_some())
            };
            let subject = (k.saturating_sub(12)..k - 1)
                .rev()
                .take_while(|&j| !tokens[j].ends_with('.'))
                .find_map(|j| module_in(tokens[j]));
            let object = tokens.get(k + 2).and_then(|t| module_in(t));
            let shown = tokens[k.saturating_sub(6)..(k + 3).min(tokens.len())].join(" ");
            let (Some(subject), Some(from)) = (
                subject.clone(),
                object.as_deref().and_then(floor_of).or(own),
            ) else {
                writeln!(
                    problems,
                    "{}: \"{shown}\": name the folders in backticks (`io/`), so that the \
                     distance can be checked",
                    doc.display()
                )
                .unwrap();
                continue;
            };
            let to = floor_of(&subject).unwrap();
            let actual = i32::from(to) - i32::from(from);
            let said = if up { n as i32 } else { -(n as i32) };
            if actual != said {
                writeln!(
                    problems,
                    "{}: \"{shown}\": `{subject}/` is on floor {to}, {} floor(s) {} the {}",
                    doc.display(),
                    actual.abs(),
                    if actual >= 0 { "above" } else { "below" },
                    object.map_or("text's own folder".to_string(), |o| format!("`{o}/`")),
                )
                .unwrap();
            }
        }
    }
    assert!(
        problems.is_empty(),
        "the docs say a folder is a number of floors from another that the floor table \
         (docs/ARCHITECTURE.md, \"Floors\") does not:\n{problems}"
    );
}

/// "Checks that they have teeth, N ways": as many ways as the crate has
/// teeth (`executor/src/teeth.rs`), each named, in the README and in
/// `scripts/loom`.
#[test]
fn the_loom_teeth_are_counted_as_the_crate_has_them() {
    let root = repo_root();
    let teeth_rs = std::fs::read_to_string(root.join("executor/src/teeth.rs")).unwrap();
    // `Tooth::SkipPosterFence => "skip_poster_fence",`: the names.
    let teeth: Vec<&str> = teeth_rs
        .lines()
        .filter(|l| l.trim_start().starts_with("Tooth::") && l.contains("=> \""))
        .filter_map(|l| l.split('"').nth(1))
        .collect();
    assert!(
        teeth.len() >= 10,
        "executor/src/teeth.rs's names were not read"
    );
    let mut problems = String::new();
    for file in ["README.md", "scripts/loom"] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let flat = text
            .replace('#', " ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        // "teeth, N ways", wherever the text says how many.
        let said = flat.match_indices("teeth").find_map(|(at, _)| {
            flat[at..]
                .split(' ')
                .take(8)
                .collect::<Vec<_>>()
                .windows(2)
                .find(|w| w[1].trim_matches(|c: char| !c.is_ascii_alphabetic()) == "ways")
                .and_then(|w| number(w[0].trim_matches(|c: char| !c.is_ascii_alphanumeric())))
        });
        for tooth in &teeth {
            if !text.contains(&format!("POOL_LOOM_TOOTH={tooth}")) {
                writeln!(problems, "{file}: does not name POOL_LOOM_TOOTH={tooth}").unwrap();
            }
        }
        if said != Some(teeth.len()) {
            writeln!(
                problems,
                "{file}: the teeth are said to be checked {said:?} ways; the crate has {}: \
                 {teeth:?}",
                teeth.len()
            )
            .unwrap();
        }
    }
    assert!(problems.is_empty(), "{problems}");
}

/// The claim checks themselves, on made-up text.
#[test]
fn the_claim_checks_read_paths_distances_and_numbers() {
    assert_eq!(
        backticked_rust_paths("see `scheduler::registry::Registry` and `a b::c`, `x`"),
        [(1, "scheduler::registry::Registry".to_string())]
    );
    let items = CrateItems::read();
    assert_eq!(items.unresolved("scheduler::registry::Registry"), None);
    assert_eq!(items.unresolved("Registry::enable_driver"), None);
    assert!(items.unresolved("Registry::use_driver").is_some());
    assert!(items.unresolved("scheduler::console::Serve").is_some());
    assert_eq!(items.unresolved("io::Error"), None, "std's");
    assert_eq!(items.unresolved("tokio::spawn"), None, "another crate's");
    assert_eq!(number("eleven"), Some(11));
    assert_eq!(number("a"), Some(1));
}
