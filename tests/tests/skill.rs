//! `qmd skill show|install`: the shipped skill, installed as qmd installs
//! its own (a bootstrap SKILL.md, the references beside it, an optional
//! relative `.claude/skills/qmd` link).

use crate::common;

use std::fs;

use common::Env;

#[test]
fn show_prints_the_skill_for_this_projects_commands() {
    let env = Env::new();
    let out = env.ok(&["skill", "show"]).stdout;
    assert!(out.starts_with("QMD Skill\n\n---\nname: qmd\n"), "{out}");
    for command in ["qmd search", "qmd vsearch", "qmd query", "qmd get", "qmd multi-get", "qmd mcp"] {
        assert!(out.contains(command), "the skill describes `{command}`");
    }
}

#[test]
fn install_writes_a_bootstrap_refuses_to_overwrite_and_links_on_request() {
    let env = Env::new();
    let project = env.path("project");
    fs::create_dir_all(&project).unwrap();
    let out = env.qmd_with(&project, &["skill", "install"], &[]).success();
    let dir = project.join(".agents/skills/qmd");
    assert_eq!(
        out.stdout,
        format!(
            "✓ Installed QMD skill to {}\nTip: create a Claude symlink manually at {}\n",
            dir.display(),
            project.join(".claude/skills/qmd").display()
        )
    );
    let skill = fs::read_to_string(dir.join("SKILL.md")).unwrap();
    assert!(skill.contains("!`qmd skill show`"), "{skill}");
    assert!(fs::read_to_string(dir.join("references/mcp-setup.md")).unwrap().contains("qmd mcp"));
    assert!(!project.join(".claude").exists(), "no link without --yes off a terminal");

    // A second install refuses; --force replaces the files it wrote (a
    // file it did not write stays: only what its marker lists is removed).
    fs::write(dir.join("stray.md"), "mine").unwrap();
    fs::remove_file(dir.join("references/mcp-setup.md")).unwrap();
    let again = env.qmd_with(&project, &["skill", "install"], &[]).failure();
    assert!(again.stderr.contains(&format!("Skill already exists: {} (use --force to replace it)", dir.display())));
    assert!(dir.join("stray.md").exists(), "a refused install changes nothing");
    let out = env.qmd_with(&project, &["skill", "install", "--force", "--yes"], &[]).success();
    assert_eq!(fs::read_to_string(dir.join("stray.md")).unwrap(), "mine");
    assert!(dir.join("references/mcp-setup.md").is_file());
    let link = project.join(".claude/skills/qmd");
    assert!(out.stdout.contains(&format!("✓ Linked Claude skill at {}", link.display())), "{}", out.stdout);
    assert_eq!(fs::read_link(&link).unwrap(), std::path::Path::new("../../.agents/skills/qmd"));
    assert!(link.join("SKILL.md").is_file(), "the link resolves");
    // Linking again is a no-op; something else in its place needs --force.
    env.qmd_with(&project, &["skill", "install", "-f", "--yes"], &[]).success();
    fs::remove_file(&link).unwrap();
    fs::create_dir_all(&link).unwrap();
    let taken = env.qmd_with(&project, &["skill", "install", "-f", "--yes"], &[]).success();
    assert!(taken.stdout.contains("Linked"), "--force replaces what was there: {}", taken.stdout);

    // --global installs under HOME.
    env.qmd_with(&project, &["skill", "install", "--global"], &[]).success();
    assert!(env.root().join(".agents/skills/qmd/SKILL.md").is_file());
}

#[test]
fn skills_lists_prints_and_locates_in_qmds_shapes() {
    let env = Env::new();
    let list = env.ok(&["skills"]).stdout;
    assert!(list.starts_with("  qmd  Search local markdown"), "{list}");
    let json: serde_json::Value = serde_json::from_str(&env.ok(&["skills", "list", "--json"]).stdout).unwrap();
    assert_eq!(json["success"], true);
    assert_eq!(json["data"][0]["name"], "qmd");
    let raw = env.ok(&["skills", "get", "qmd", "--full", "--json"]).stdout;
    assert!(raw.starts_with(r#"{"success":true,"data":[{"name":"qmd","content":"---"#), "qmd's field order: {raw}");
    let json: serde_json::Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(json["data"][0]["files"][0]["path"], "references/mcp-setup.md");
    let text = env.ok(&["skills", "get", "qmd", "--full"]).stdout;
    assert!(text.contains("\n--- references/mcp-setup.md ---\n"), "{text}");
    let missing = env.qmd(&["skills", "get", "nope"]).failure();
    assert!(missing.stderr.contains("Skill not found: nope"), "{}", missing.stderr);

    // $QMD_SKILLS_DIR serves a folder of skills instead, as in qmd.
    env.write("skills/extra/SKILL.md", "---\nname: extra\ndescription: An extra skill\n---\n# Extra\n");
    env.write("skills/extra/notes/tip.md", "a tip\n");
    env.write("skills/secret/SKILL.md", "---\nname: secret\ndescription: hidden one\nhidden: true\n---\n");
    let dir = env.path("skills");
    let dir = dir.to_str().unwrap();
    let vars = [("QMD_SKILLS_DIR", dir)];
    assert_eq!(env.qmd_with(env.root(), &["skills"], &vars).success().stdout, "  extra  An extra skill\n");
    let path = env.qmd_with(env.root(), &["skills", "path", "extra"], &vars).success().stdout;
    assert_eq!(path, format!("{dir}/extra\n"));
    let full = env.qmd_with(env.root(), &["skills", "get", "extra", "--full"], &vars).success().stdout;
    assert!(full.contains("--- notes/tip.md ---\n\na tip\n"), "{full}");
    let show = env.qmd_with(env.root(), &["skill", "show"], &vars).failure();
    assert!(show.stderr.contains("QMD skill not found. Reinstall qmd or set QMD_SKILLS_DIR."), "{}", show.stderr);
}

/// A skill folder from `QMD_SKILLS_DIR` is read as every folder here: a
/// file whose real path leaves the skill's folder is left out and named, a
/// linked folder (a loop included) is not followed, and names and
/// descriptions are shown with control characters escaped.
#[test]
fn a_skill_folder_never_reads_past_itself() {
    let env = Env::new();
    env.write("skills/tips/SKILL.md", "---\nname: tips\ndescription: \"Tips \x1b[31mred\"\n---\n# Tips\n");
    env.write("skills/tips/inside.md", "inside text\n");
    let secret = env.write("private/secret.txt", "the build machine's secret\n");
    let folder = env.path("skills/tips");
    std::os::unix::fs::symlink(&secret, folder.join("leak.md")).unwrap();
    std::os::unix::fs::symlink(&folder, folder.join("loop")).unwrap();
    std::os::unix::fs::symlink(folder.join("inside.md"), folder.join("alias.md")).unwrap();
    let dir = env.path("skills");
    let vars = [("QMD_SKILLS_DIR", dir.to_str().unwrap())];
    let out = env.qmd_with(env.root(), &["skills", "get", "tips", "--full"], &vars).success();
    assert!(!out.stdout.contains("secret"), "{}", out.stdout);
    assert!(out.stdout.contains("--- inside.md ---") && out.stdout.contains("--- alias.md ---"), "{}", out.stdout);
    assert!(out.stderr.contains("skipped skill file leak.md: a link out of"), "{}", out.stderr);
    assert!(out.stderr.contains("skipped skill file loop: a linked folder is not followed"), "{}", out.stderr);
    let listed = env.qmd_with(env.root(), &["skills"], &vars).success().stdout;
    assert!(listed.contains("Tips \\x1b[31mred") && !listed.contains('\x1b'), "{listed:?}");
}
