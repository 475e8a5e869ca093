// Drives a scholarflow LangGraph server with @langchain/langgraph-sdk, the way agent-chat-ui
// does: messages in, stream modes values / messages-tuple / custom, cancel, a multitask
// strategy, threads.copy, and the review_plan interrupt with its resume.
//
//   node tests/integration/js/clients.mjs SERVER_URL FAKE_ADMIN_URL CONFIG_JSON_PATH
//
// tests/integration/test_sdk_clients.py scripts the fake OpenAI server, writes the config (questions,
// markers, paper texts) and checks what this prints: one JSON object, one key per scenario.
// A scenario that throws reports {"error": "..."} and the others still run.

import { readFile } from "node:fs/promises";
import { Client } from "@langchain/langgraph-sdk";

const [serverUrl, fakeAdmin, configPath] = process.argv.slice(2);
if (!serverUrl || !fakeAdmin || !configPath) {
  console.error("usage: node clients.mjs SERVER_URL FAKE_ADMIN_URL CONFIG_JSON_PATH");
  process.exit(2);
}
const config = JSON.parse(await readFile(configPath, "utf8"));
const client = new Client({ apiUrl: serverUrl });
const graph = config.graph;
const STREAM_MODES = ["values", "messages-tuple", "custom"];
const TIMEOUT_MS = 120_000;
const POLL_MS = 50;

const human = (text) => ({ type: "human", content: text });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function textOf(message) {
  const content = message?.content;
  if (Array.isArray(content)) return content.map((part) => part?.text ?? "").join("");
  return content ?? "";
}

function slowPaperRun(marker, docMarker) {
  return {
    messages: [human(`${marker}: which attention pattern?`)],
    document_contents: { [`paper-${marker.toLowerCase()}`]: `${config.paper}\n\n${docMarker}\n` },
    mode_type: "LITERATURE_QA",
  };
}

async function until(probe, what) {
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    const found = await probe();
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting: ${what}`);
    await sleep(POLL_MS);
  }
}

async function fakeStats() {
  const response = await fetch(`${fakeAdmin}/stats`);
  if (!response.ok) throw new Error(`fake stats: HTTP ${response.status}`);
  return response.json();
}

// The scripted model is answering a call that names `marker`.
async function inModel(marker) {
  await until(async () => {
    const stats = await fakeStats();
    return stats.in_flight > 0 &&
      stats.requests.some((r) => JSON.stringify(r.messages).includes(marker));
  }, `an LLM call naming ${marker} in flight`);
}

// No call left in flight: a cut run's call sleeps on in the fake after the run is gone.
async function settled() {
  await until(async () => (await fakeStats()).in_flight <= 0, "the fake to settle");
}

async function streamRun(threadId, payload) {
  const run = { runId: null, events: [], values: {}, custom: [], tokens: [], errors: [] };
  for await (const chunk of client.runs.stream(threadId, graph, {
    streamMode: STREAM_MODES,
    ...payload,
  })) {
    if (!run.events.includes(chunk.event)) run.events.push(chunk.event);
    if (chunk.event === "metadata") run.runId = chunk.data.run_id;
    else if (chunk.event === "values") run.values = chunk.data;
    else if (chunk.event === "custom") run.custom.push(chunk.data);
    else if (chunk.event === "error") run.errors.push(chunk.data);
    else if (chunk.event === "messages") {
      const [message, metadata] = chunk.data;
      run.tokens.push({ node: metadata?.langgraph_node, content: textOf(message), id: message?.id });
    }
  }
  return run;
}

async function conversation(threadId) {
  const state = await client.threads.getState(threadId);
  return (state.values?.messages ?? []).map((m) => ({ type: m.type, content: textOf(m), id: m.id }));
}

const pick = (values) => ({
  answer: values.answer,
  detected_intent: values.detected_intent,
  strategy: values.strategy,
  session: values.session,
});

// --- scenarios --------------------------------------------------------------------------------

let chatThread = null;

async function streamScenario() {
  const { thread_id } = await client.threads.create();
  chatThread = thread_id;
  const run = await streamRun(thread_id, {
    input: { messages: [human(config.question)], content: config.paper },
  });
  return {
    thread_id,
    events: run.events,
    errors: run.errors,
    tokens: run.tokens.map((t) => t.content),
    token_nodes: [...new Set(run.tokens.map((t) => t.node))],
    token_ids: [...new Set(run.tokens.map((t) => t.id))],
    custom_types: run.custom.map((e) => e.type),
    values: pick(run.values),
    value_messages: (run.values.messages ?? []).map((m) => m.type),
    state_messages: await conversation(thread_id),
  };
}

async function cancelScenario() {
  const { thread_id } = await client.threads.create();
  const marker = config.cancel_marker;
  const cut = await client.runs.create(thread_id, graph, {
    input: slowPaperRun(marker, config.cancel_doc_marker),
  });
  await inModel(marker);
  await client.runs.cancel(thread_id, cut.run_id, true);
  const cancelled = await client.runs.get(thread_id, cut.run_id);
  const next = await streamRun(thread_id, { input: { messages: [human(config.next_question)] } });
  const after = await client.runs.get(thread_id, next.runId);
  const state = await client.threads.getState(thread_id);
  await settled();
  return {
    cancelled_status: cancelled.status,
    next_status: after.status,
    next_errors: next.errors,
    next_values: pick(next.values),
    next_documents: state.values?.documents ?? [],
    messages: await conversation(thread_id),
  };
}

async function multitaskScenario() {
  const { thread_id } = await client.threads.create();
  const marker = config.multitask_marker;
  const busy = await client.runs.create(thread_id, graph, {
    input: slowPaperRun(marker, config.multitask_doc_marker),
  });
  await inModel(marker);
  let rejectStatus = "accepted";
  try {
    await client.runs.create(thread_id, graph, {
      input: { messages: [human(config.rejected_question)] },
      multitaskStrategy: "reject",
    });
  } catch (error) {
    rejectStatus = error?.status ?? String(error);
  }
  const queued = await client.runs.create(thread_id, graph, {
    input: { messages: [human(config.queued_question)] },
    multitaskStrategy: "enqueue",
  });
  await client.runs.join(thread_id, queued.run_id);
  const statuses = [];
  for (const run of [busy, queued]) statuses.push((await client.runs.get(thread_id, run.run_id)).status);
  const messages = await conversation(thread_id);
  return {
    reject_status: rejectStatus,
    statuses,
    message_types: messages.map((m) => m.type),
    messages: messages.map((m) => m.content),
    queued_question: config.queued_question,
  };
}

async function copyScenario() {
  if (!chatThread) throw new Error("the stream scenario made no thread to copy");
  const copy = await client.threads.copy(chatThread);
  const run = await streamRun(copy.thread_id, {
    input: { messages: [human(config.copy_question)] },
  });
  return {
    original_id: chatThread,
    copy_id: copy.thread_id,
    errors: run.errors,
    copy_session: run.values.session,
    original_count: (await conversation(chatThread)).length,
    copy_count: (await conversation(copy.thread_id)).length,
  };
}

async function reviewScenario() {
  const { thread_id } = await client.threads.create();
  const paused = await streamRun(thread_id, {
    input: {
      messages: [human(config.review_question)],
      mode_type: "LITERATURE_QA",
      document_contents: { sparse: config.paper, rag: config.second_paper },
    },
    context: { review_plan: true },
  });
  const thread = await client.threads.get(thread_id);
  const state = await client.threads.getState(thread_id);
  const interrupts = state.interrupts ??
    (state.tasks ?? []).flatMap((task) => task.interrupts ?? []);
  const resumed = await streamRun(thread_id, {
    command: { resume: { action: "approve" } },
    context: { review_plan: true },
  });
  return {
    paused_errors: paused.errors,
    streamed_interrupt: "__interrupt__" in paused.values,
    thread_status: thread.status,
    interrupt: interrupts.length === 1 ? interrupts[0].value : interrupts,
    resumed_errors: resumed.errors,
    resumed_answer: resumed.values.answer,
    resumed_strategy: resumed.values.strategy,
    final_status: (await client.threads.get(thread_id)).status,
    message_types: (await conversation(thread_id)).map((m) => m.type),
  };
}

const out = {};
for (const [name, scenario] of Object.entries({
  stream: streamScenario,
  cancel: cancelScenario,
  multitask: multitaskScenario,
  copy: copyScenario,
  review: reviewScenario,
})) {
  try {
    out[name] = await scenario();
  } catch (error) {
    out[name] = { error: String(error?.stack ?? error) };
    try {
      await settled();
    } catch {
      // the next scenario reports what is still wrong
    }
  }
}
console.log(JSON.stringify(out));
