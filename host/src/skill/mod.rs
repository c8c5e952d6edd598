//! The agent skill qmd ships: `qmd skill show|install` and
//! `qmd skills list|get|path` (qmd's texts and JSON shapes), over the
//! skills built into this binary or those of `$QMD_SKILLS_DIR`.

mod catalog;
mod install;

use anyhow::{Context, Result, bail};
use qmd_core::display::escape_controls;
use serde::Serialize;

use crate::cli::args::{SkillCommand, SkillsCommand};

pub fn skill(command: SkillCommand) -> Result<()> {
    match command {
        SkillCommand::Show => {
            let skill = qmd_skill()?;
            println!("QMD Skill\n");
            print!("{}", with_newline(&skill.content));
            Ok(())
        }
        SkillCommand::Install { global, yes, force } => install::install(global, yes, force),
    }
}

/// The qmd skill itself (qmd's message when a skills folder lacks it).
pub(crate) fn qmd_skill() -> Result<catalog::Skill> {
    catalog::all()?
        .into_iter()
        .find(|s| s.name == "qmd")
        .context("QMD skill not found. Reinstall qmd or set QMD_SKILLS_DIR.")
}

fn with_newline(text: &str) -> String {
    if text.ends_with('\n') { text.to_string() } else { format!("{text}\n") }
}

/// qmd's JSON shapes, fields in its order.
#[derive(Serialize)]
struct Envelope<T> {
    success: bool,
    data: T,
}

#[derive(Serialize)]
struct Listed<'a> {
    name: &'a str,
    description: &'a str,
}

#[derive(Serialize)]
struct Got<'a> {
    name: &'a str,
    content: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    files: Option<Vec<File<'a>>>,
}

#[derive(Serialize)]
struct File<'a> {
    path: &'a str,
    content: &'a str,
}

#[derive(Serialize)]
struct Paths {
    paths: Vec<String>,
}

#[derive(Serialize)]
struct SkillPath<'a> {
    name: &'a str,
    path: Option<String>,
}

fn print_json<T: Serialize>(data: T) -> Result<()> {
    println!("{}", serde_json::to_string(&Envelope { success: true, data })?);
    Ok(())
}

pub fn skills(command: Option<SkillsCommand>, as_json: bool) -> Result<()> {
    let visible = || -> Result<Vec<catalog::Skill>> { Ok(catalog::all()?.into_iter().filter(|s| !s.hidden).collect()) };
    match command.unwrap_or(SkillsCommand::List) {
        SkillsCommand::List => {
            let skills = visible()?;
            if as_json {
                print_json(
                    skills.iter().map(|s| Listed { name: &s.name, description: &s.description }).collect::<Vec<_>>(),
                )?;
            } else if skills.is_empty() {
                println!("No skills found");
            } else {
                let width = skills.iter().map(|s| s.name.chars().count()).max().unwrap_or(0);
                // Names and descriptions come from QMD_SKILLS_DIR's files.
                for s in &skills {
                    println!("  {:width$}  {}", escape_controls(&s.name), escape_controls(&s.description));
                }
            }
        }
        SkillsCommand::Get { names, full, all } => {
            let targets =
                if all { visible()? } else { names.iter().map(|n| catalog::find(n)).collect::<Result<_>>()? };
            if targets.is_empty() {
                bail!("No skill name provided. Usage: qmd skills get <name>");
            }
            if as_json {
                let got: Vec<Got> = targets
                    .iter()
                    .map(|s| Got {
                        name: &s.name,
                        content: &s.content,
                        files: full.then(|| s.files.iter().map(|(path, content)| File { path, content }).collect()),
                    })
                    .collect();
                print_json(got)?;
                return Ok(());
            }
            for (i, s) in targets.iter().enumerate() {
                if i > 0 {
                    println!("\n---\n");
                }
                print!("{}", with_newline(&s.content));
                if full {
                    for (path, content) in &s.files {
                        println!("\n--- {} ---\n", escape_controls(path));
                        print!("{}", with_newline(content));
                    }
                }
            }
        }
        SkillsCommand::Path { name } => {
            // Built-in skills live in the binary: no folder to name.
            let Some(name) = name else {
                let paths: Vec<String> = catalog::skills_dir().map(|d| d.display().to_string()).into_iter().collect();
                if as_json {
                    print_json(Paths { paths })?;
                } else {
                    paths.iter().for_each(|p| println!("{p}"));
                }
                return Ok(());
            };
            let skill = catalog::find(&name)?;
            let path = skill.dir.map(|d| d.display().to_string());
            if as_json {
                print_json(SkillPath { name: &skill.name, path })?;
            } else {
                println!(
                    "{}",
                    path.unwrap_or_else(|| "(built into qmd; set QMD_SKILLS_DIR to serve skills from a folder)".into())
                );
            }
        }
    }
    Ok(())
}
