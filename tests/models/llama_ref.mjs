// The llama.cpp reference for the GGUF tests: runs a GGUF model through
// node-llama-cpp (the runtime qmd 2.8.3 uses), CPU only, and prints JSON.
//
//   ref=$(scripts/llama-ref.sh)
//   LLAMA_REF_DIR=$ref node tests/models/llama_ref.mjs embed MODEL.gguf < texts.json
//       -> {"tokens": [[id...] per text], "input_tokens": [[id...]], "embeddings": [[f...]]}
//   LLAMA_REF_DIR=$ref node tests/models/llama_ref.mjs bench-embed MODEL.gguf < texts.json
//       -> {"layouts": {name: {contexts, threads, texts, seconds, texts_per_s}}, "peak_rss_bytes"}
//   LLAMA_REF_DIR=$ref node tests/models/llama_ref.mjs rank MODEL.gguf < {"query", "documents"}
//       -> {"scores": [f...], "inputs": [[id...] per document]}
//   LLAMA_REF_DIR=$ref node tests/models/llama_ref.mjs bench-rank MODEL.gguf < {"query", "documents"}
//       -> {"layouts": {name: {contexts, threads, documents, seconds, documents_per_s}}, "peak_rss_bytes"}
//   LLAMA_REF_DIR=$ref node tests/models/llama_ref.mjs tokenize MODEL.gguf < texts.json
//       -> {"plain": [[id...] per text], "special": [[id...] per text]}
//   LLAMA_REF_DIR=$ref node tests/models/llama_ref.mjs greedy MODEL.gguf < {"prompt", "tokens"}
//       -> {"prompt": [id...], "generated": [id...], "first": [[id, probability]...]}
//   LLAMA_REF_DIR=$ref node tests/models/llama_ref.mjs bench-generate MODEL.gguf < {"prompt", "tokens", "threads"}
//       -> {"prompt_tokens", "prompt_per_s", "generated", "decode_per_s", "peak_rss_bytes", "start_rss_bytes"}
//
// `tokenize` gives llama.cpp's tokens of each text with special tokens
// left as text (`plain`) and parsed (`special`), no BOS/EOS added.
// `greedy` tokenizes the prompt with special tokens parsed (BOS in front
// where the vocabulary adds one), generates `tokens` tokens at temperature 0
// (end-of-generation tokens included) and gives the first step's 20 most
// probable tokens (softmax of the raw logits).
// `tokens` is model.tokenize(text): the text's tokens without special ones.
// `input_tokens` is what getEmbeddingFor() evaluates: for a WordPiece (BERT)
// vocabulary it adds [CLS] in front and [SEP] at the end, as node-llama-cpp's
// resolveBeginningTokenToPrepend/resolveEndTokenToAppend do. Embeddings are
// the raw vectors llama.cpp returns (llama_get_embeddings_seq: the model's
// pooling, no normalisation).
//
// Recorded references: llama.cpp's CPU kernels round differently on each
// instruction set (AVX2, AVX-512, NEON), so a live answer depends on the
// machine that runs the test. Every answer of `embed`, `rank`, `tokenize`
// and `greedy` is recorded in tests/fixtures/llama-ref/, named by the
// SHA-256 of the command, the model file's bytes and the input, with the
// machine it was made on; a recording is answered from then on, on every
// machine, and llama.cpp only runs for a model file or input never seen
// (a fixture made differently elsewhere). LLAMA_REF_LIVE=1 ignores the
// recordings; LLAMA_REF_RECORD=0 writes none. Benchmarks always run live.
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

function fail(message) {
    process.stderr.write(`llama_ref.mjs: ${message}\n`);
    process.exit(2);
}

// The process before llama.cpp and the model are loaded: what the bench
// takes off the peak to see the model's own share.
const startRssBytes = process.memoryUsage().rss;

const USAGE = "usage: llama_ref.mjs embed|bench-embed|rank|bench-rank|tokenize|greedy|bench-generate MODEL.gguf < input.json";
const COMMANDS = ["embed", "bench-embed", "rank", "bench-rank", "tokenize", "greedy", "bench-generate"];
const [command, modelPath] = process.argv.slice(2);
if (!COMMANDS.includes(command) || !modelPath)
    fail(USAGE);

const refDir = process.env.LLAMA_REF_DIR;
if (!refDir)
    fail("LLAMA_REF_DIR is not set; run `LLAMA_REF_DIR=$(scripts/llama-ref.sh) node tests/models/llama_ref.mjs ...`");
const entry = path.join(path.resolve(refDir), "node_modules", "node-llama-cpp", "dist", "index.js");
if (!fs.existsSync(entry))
    fail(`${entry} does not exist; LLAMA_REF_DIR must be the directory scripts/llama-ref.sh prints`);

const resolvedModel = path.resolve(modelPath);
if (!fs.existsSync(resolvedModel) || !fs.statSync(resolvedModel).isFile())
    fail(`model file ${resolvedModel} does not exist`);
{
    const fd = fs.openSync(resolvedModel, "r");
    const magic = Buffer.alloc(4);
    fs.readSync(fd, magic, 0, 4, 0);
    fs.closeSync(fd);
    if (magic.toString("latin1") !== "GGUF")
        fail(`${resolvedModel} is not a GGUF file (magic ${JSON.stringify(magic.toString("latin1"))})`);
}

let input;
try {
    input = JSON.parse(fs.readFileSync(0, "utf8"));
} catch (e) {
    fail(`stdin is not valid JSON: ${e.message}`);
}

const RECORDED = ["embed", "rank", "tokenize", "greedy"];
const recordings = path.join(path.dirname(new URL(import.meta.url).pathname), "..", "fixtures", "llama-ref");

function sha256File(file) {
    const hash = crypto.createHash("sha256");
    const fd = fs.openSync(file, "r");
    const buffer = Buffer.alloc(1 << 22);
    for (let n; (n = fs.readSync(fd, buffer, 0, buffer.length, null)) > 0;)
        hash.update(buffer.subarray(0, n));
    fs.closeSync(fd);
    return hash.digest("hex");
}

/** What the recording was made on: the instruction sets llama.cpp's kernels pick from. */
function machine() {
    let flags = [];
    try {
        const line = fs.readFileSync("/proc/cpuinfo", "utf8").split("\n").find((l) => /^(flags|Features)\s*:/.test(l));
        const all = new Set((line ?? "").split(":")[1]?.trim().split(/\s+/) ?? []);
        flags = ["avx2", "fma", "f16c", "avx512f", "avx512_vnni", "avx512bw", "asimddp", "sve"].filter((f) => all.has(f));
    } catch {}
    return { arch: process.arch, platform: process.platform, cpu: os.cpus()[0]?.model ?? "", flags };
}

/** Writes to stdout before any exit (a pipe may take it in pieces). */
function writeAll(text) {
    const bytes = Buffer.from(text);
    for (let at = 0; at < bytes.length;) {
        try {
            at += fs.writeSync(1, bytes, at);
        } catch (e) {
            if (e.code !== "EAGAIN")
                throw e;
        }
    }
}

let recording = null;
if (RECORDED.includes(command)) {
    const modelSha = sha256File(resolvedModel);
    const key = crypto.createHash("sha256").update(JSON.stringify([command, modelSha, input])).digest("hex").slice(0, 32);
    recording = { file: path.join(recordings, `${command}-${key}.json`), modelSha };
    if (process.env.LLAMA_REF_LIVE !== "1" && fs.existsSync(recording.file)) {
        const recorded = JSON.parse(fs.readFileSync(recording.file, "utf8"));
        if (recorded.model_sha256 === modelSha && recorded.command === command) {
            writeAll(JSON.stringify(recorded.output) + "\n");
            process.exit(0);
        }
    }
}
if (command === "rank" || command === "bench-rank") {
    if (typeof input?.query !== "string" || !Array.isArray(input?.documents) ||
        !input.documents.every((d) => typeof d === "string"))
        fail('rank reads {"query": string, "documents": [string, ...]} on stdin');
} else if (command === "greedy" || command === "bench-generate") {
    if (typeof input?.prompt !== "string" || !Number.isInteger(input?.tokens))
        fail(`${command} reads {"prompt": string, "tokens": integer} on stdin`);
} else if (!Array.isArray(input) || !input.every((t) => typeof t === "string"))
    fail(`${command} reads a JSON array of strings on stdin`);

const { getLlama } = await import(pathToFileURL(entry).href);
// Prebuilt CPU binary only: never compile or download anything.
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
let model;
try {
    model = await llama.loadModel({ modelPath: resolvedModel, gpuLayers: 0 });
} catch (e) {
    fail(`llama.cpp could not load ${resolvedModel}: ${e.message}`);
}

const CONTEXT = { contextSize: 512, batchSize: 512 };

function evaluatedTokens(text) {
    // mirrors LlamaEmbeddingContext.getEmbeddingFor
    const tokens = model.tokenize(text, false);
    if (tokens.length === 0)
        return tokens;
    const wpm = model.vocabularyType === "wpm";
    const begin = wpm ? model.tokens.bos : (model.tokens.shouldPrependBosToken ? model.tokens.bos : null);
    const end = wpm ? model.tokens.sep : (model.tokens.shouldAppendEosToken ? model.tokens.eos : null);
    const out = [...tokens];
    if (begin != null && out[0] !== begin)
        out.unshift(begin);
    if (end != null && out.at(-1) !== end)
        out.push(end);
    return out;
}

async function embed(texts) {
    const context = await model.createEmbeddingContext({ ...CONTEXT, threads: 1 });
    const embeddings = [];
    for (const text of texts)
        embeddings.push(Array.from((await context.getEmbeddingFor(text)).vector));
    await context.dispose();
    return {
        tokens: texts.map((t) => Array.from(model.tokenize(t, false))),
        input_tokens: texts.map(evaluatedTokens),
        embeddings,
    };
}

async function benchEmbed(texts) {
    if (texts.length === 0)
        fail("bench-embed needs at least one text");
    const layouts = { "1x2": { contexts: 1, threads: 2 }, "2x1": { contexts: 2, threads: 1 } };
    const results = {};
    for (const [name, { contexts, threads }] of Object.entries(layouts)) {
        const ctxs = [];
        for (let i = 0; i < contexts; i++)
            ctxs.push(await model.createEmbeddingContext({ ...CONTEXT, threads }));
        // warm-up: a few texts on every context
        await Promise.all(ctxs.map(async (ctx) => {
            for (const text of texts.slice(0, 3))
                await ctx.getEmbeddingFor(text);
        }));
        // texts dealt round-robin, each context works through its share in turn
        const shares = ctxs.map((_, i) => texts.filter((_, j) => j % contexts === i));
        const start = process.hrtime.bigint();
        await Promise.all(ctxs.map(async (ctx, i) => {
            for (const text of shares[i])
                await ctx.getEmbeddingFor(text);
        }));
        const seconds = Number(process.hrtime.bigint() - start) / 1e9;
        results[name] = { contexts, threads, texts: texts.length, seconds, texts_per_s: texts.length / seconds };
        for (const ctx of ctxs)
            await ctx.dispose();
    }
    return { layouts: results, peak_rss_bytes: process.resourceUsage().maxRSS * 1024, start_rss_bytes: startRssBytes };
}

// `inputs` are the tokens the ranking context evaluates for each document
// (node-llama-cpp's internal _getEvaluationInput: the template filled in).
async function rank({ query, documents }) {
    const context = await model.createRankingContext({ contextSize: 4096, threads: 1 });
    const scores = await context.rankAll(query, documents);
    const inputs = documents.map((d) => Array.from(context._getEvaluationInput(query, d)));
    await context.dispose();
    return { scores, inputs };
}

// qmd's ranking contexts: 4,096 tokens; the documents dealt over the
// contexts, each context ranking its share with rankAll as qmd does.
async function benchRank({ query, documents }) {
    const layouts = { "1x2": { contexts: 1, threads: 2 }, "2x1": { contexts: 2, threads: 1 } };
    const results = {};
    for (const [name, { contexts, threads }] of Object.entries(layouts)) {
        const ctxs = [];
        for (let i = 0; i < contexts; i++)
            ctxs.push(await model.createRankingContext({ contextSize: 4096, batchSize: 4096, threads }));
        await Promise.all(ctxs.map((ctx) => ctx.rankAll(query, documents.slice(0, 1))));
        const shares = ctxs.map((_, i) => documents.filter((_, j) => j % contexts === i));
        const start = process.hrtime.bigint();
        await Promise.all(ctxs.map((ctx, i) => ctx.rankAll(query, shares[i])));
        const seconds = Number(process.hrtime.bigint() - start) / 1e9;
        results[name] = { contexts, threads, documents: documents.length, seconds, documents_per_s: documents.length / seconds };
        for (const ctx of ctxs)
            await ctx.dispose();
    }
    return { layouts: results, peak_rss_bytes: process.resourceUsage().maxRSS * 1024, start_rss_bytes: startRssBytes };
}

function tokenize(texts) {
    return {
        plain: texts.map((t) => Array.from(model.tokenize(t, false))),
        special: texts.map((t) => Array.from(model.tokenize(t, true))),
    };
}

async function greedy({ prompt, tokens: count }) {
    const tokens = Array.from(model.tokenize(prompt, true));
    if (model.tokens.shouldPrependBosToken && tokens[0] !== model.tokens.bos)
        tokens.unshift(model.tokens.bos);
    const context = await model.createContext({ contextSize: 2048, threads: 1 });
    const sequence = context.getSequence();
    const generated = [];
    let first = null;
    const options = { temperature: 0, yieldEogToken: true };
    for await (const step of sequence.evaluateWithMetadata(tokens, { probabilities: true }, options)) {
        if (first == null)
            first = [...step.probabilities.entries()].sort((a, b) => b[1] - a[1]).slice(0, 20);
        generated.push(step.token);
        if (generated.length >= count)
            break;
    }
    await context.dispose();
    return { prompt: tokens, generated, first };
}

// Prompt processing and decoding speed, greedy, one sequence: the time to
// the first generated token is the prompt's, the rest the decoding's (a
// first run warms the weights up).
async function benchGenerate({ prompt, tokens: count, threads }) {
    const tokens = Array.from(model.tokenize(prompt, true));
    if (model.tokens.shouldPrependBosToken && tokens[0] !== model.tokens.bos)
        tokens.unshift(model.tokens.bos);
    let timing;
    for (let run = 0; run < 2; run++) {
        const context = await model.createContext({ contextSize: 2048, batchSize: 2048, threads });
        const sequence = context.getSequence();
        const start = process.hrtime.bigint();
        let first = null;
        let generated = 0;
        for await (const token of sequence.evaluate(tokens, { temperature: 0, yieldEogToken: true })) {
            if (first == null)
                first = process.hrtime.bigint();
            if (++generated >= count)
                break;
        }
        const end = process.hrtime.bigint();
        timing = { first: Number(first - start) / 1e9, rest: Number(end - first) / 1e9, generated };
        await context.dispose();
    }
    return {
        prompt_tokens: tokens.length,
        prompt_per_s: tokens.length / timing.first,
        generated: timing.generated,
        decode_per_s: (timing.generated - 1) / timing.rest,
        peak_rss_bytes: process.resourceUsage().maxRSS * 1024,
        start_rss_bytes: startRssBytes,
    };
}

let result;
try {
    if (command === "greedy")
        result = await greedy(input);
    else if (command === "bench-generate")
        result = await benchGenerate(input);
    else if (command === "bench-rank")
        result = await benchRank(input);
    else if (command === "tokenize")
        result = tokenize(input);
    else if (command === "embed")
        result = await embed(input);
    else if (command === "bench-embed")
        result = await benchEmbed(input);
    else
        result = await rank(input);
} catch (e) {
    fail(`${command} failed: ${e.stack ?? e}`);
}
await model.dispose();
await llama.dispose();
if (recording && process.env.LLAMA_REF_RECORD !== "0") {
    const versionFile = path.join(path.resolve(refDir), "node_modules", "node-llama-cpp", "package.json");
    const runtime = `node-llama-cpp ${JSON.parse(fs.readFileSync(versionFile, "utf8")).version}`;
    const recorded = {
        command, model: path.basename(resolvedModel), model_sha256: recording.modelSha, runtime,
        recorded_on: machine(), output: result,
    };
    fs.mkdirSync(recordings, { recursive: true });
    const partial = `${recording.file}.${process.pid}.partial`;
    fs.writeFileSync(partial, JSON.stringify(recorded) + "\n");
    fs.renameSync(partial, recording.file);
}
process.stdout.write(JSON.stringify(result) + "\n");
