/** 4. Streaming through the HTTP API: first event, time to first token against a direct stream, history events per turn. */
import type { TestSystem } from '../../tests/helpers/system';
import { STREAM_REPLIES, streamMessage, type StreamReply } from '../lib/scripts';
import { ms, summarize, table, type Summary } from '../lib/stats';
import {
  directClient,
  directStream,
  recordedLlmRequest,
  sessionHistoryEvents,
  timedApiTurn,
  turnTimeline,
  waitTurnClosed,
  type ChatBody,
  type TimedApiTurn,
  type TurnTimeline,
} from '../lib/streaming';
import type { UserContext } from '../../src/shared/user';
import { log, TARGETS, type Options, type Section } from '../options';
import { nextTag, RUN_TAG } from '../paths';

export interface StreamingHistoryRow {
  reply: StreamReply;
  chars: number;
  turns: number;
  /** text_delta events the SSE client received per turn (mean). */
  deltasMean: number;
  /** History events of each turn workflow. */
  turnEvents: number[];
  turnBytesMean: number;
  /** Events each turn added to the session workflow's history (the session's first turn excluded). */
  sessionEventsAdded: number[];
}

export interface StreamingResult {
  chunkDelayMs: number;
  turns: number;
  warmup: number;
  /** POST → first SSE event of any kind, and what that event was (the API's opening `turn` event, no id). */
  firstEvent: Summary;
  firstEventTypes: Record<string, number>;
  /** POST → first durable SSE event (with an id: the turn workflow's first event), and its type. */
  firstDurable: Summary;
  firstDurableTypes: Record<string, number>;
  post: Summary;
  sseHeaders: Summary;
  ttft: { direct: Summary; durable: Summary; added: { p50: number; p95: number; p99: number }; pairedAddedP50: number };
  durableDone: Summary;
  directTotal: Summary;
  /** Medians of when each step before the first token happened, ms after the POST started. */
  timeline: Record<'postAnswered' | 'turnStarted' | 'firstSseEvent' | 'firstDurableEvent' | 'turnBegun' | 'llmScheduled' | 'llmStarted' | 'llmRequestAtModel' | 'firstDelta', number>;
  sseRetries: number;
  /** The API's Temporal reads of turns per measured turn (POST, SSE stream): queries replay closed turns. */
  turnReads: { queries: number; describes: number; results: number };
  /** Turns whose live text (from text_delta offsets) differed from the final text. */
  liveTextMismatches: number;
  ttftSession: { turns: number; events: number; runs: number; turnEventsMean: number; turnEventsMin: number; turnEventsMax: number };
  history: { rows: StreamingHistoryRow[]; sessionFirstTurnEvents: number; sessionRuns: number };
}

export async function streamingSection(sys: TestSystem, opts: Options, _user: UserContext): Promise<StreamingResult> {
  const token = await sys.token('admin');
  const openai = directClient(sys.model);
  // A fixed pause after every text chunk for every request of this section, durable and direct alike.
  sys.model.setFaults([{ chunkDelayMs: opts.chunkDelayMs, times: 1_000_000 }]);
  sys.model.resetRequests();
  try {
    // One conversation, as a chat client would send it: each message waits for the previous answer
    // and for the session to settle (the user reads the answer before typing the next one).
    const sessionId = `stream-${RUN_TAG}`;
    let lastBody: ChatBody | undefined;
    const expected = STREAM_REPLIES.short;
    let liveTextMismatches = 0;
    const durable = async (): Promise<TimedApiTurn & { llmRequestAtModel: number }> => {
      const tag = nextTag();
      const t = await timedApiTurn(sys.apiUrl, token, sessionId, streamMessage('short', tag));
      if (t.finalText !== expected) throw new Error(`streaming turn ${t.turnId} answered ${JSON.stringify(t.finalText)}`);
      if (t.liveText !== expected) liveTextMismatches += 1;
      const req = recordedLlmRequest(sys.model, tag);
      lastBody = req.body;
      await waitTurnClosed(sys.client, t.turnId);
      return { ...t, llmRequestAtModel: req.atEpoch - t.t0Epoch };
    };
    const direct = async () => {
      if (!lastBody) throw new Error('no LLM request recorded yet');
      const r = await directStream(openai, lastBody);
      if (r.text !== expected) throw new Error(`direct stream answered ${JSON.stringify(r.text)}`);
      return r;
    };

    log(`streaming: ${opts.streamWarmup} warm-up + ${opts.streamTurns} measured turns through POST + SSE in one session, each paired with a direct openai stream of the same request (chunk delay ${opts.chunkDelayMs} ms)`);
    for (let i = 0; i < opts.streamWarmup; i++) {
      await durable();
      await direct();
    }
    liveTextMismatches = 0;
    const turns: Array<TimedApiTurn & { llmRequestAtModel: number }> = [];
    const directs: Array<Awaited<ReturnType<typeof direct>>> = [];
    if (!lastBody) await durable(); // without warm-up, the first direct request needs a recorded body
    const readsBefore = sys.turnReads();
    for (let i = 0; i < opts.streamTurns; i++) {
      // Alternate which path goes first, as in the latency section.
      if (i % 2 === 0) {
        directs.push(await direct());
        turns.push(await durable());
      } else {
        turns.push(await durable());
        directs.push(await direct());
      }
    }
    const readsAfter = sys.turnReads();
    const perTurn = (k: keyof typeof readsAfter): number => (readsAfter[k] - readsBefore[k]) / Math.max(1, turns.length);
    const timelines: TurnTimeline[] = [];
    for (const t of turns) timelines.push(await turnTimeline(sys.client, t.turnId, t.t0Epoch));
    const session = await sessionHistoryEvents(sys.client, sessionId);
    const sessionTurns = opts.streamWarmup + opts.streamTurns + (opts.streamWarmup === 0 ? 1 : 0);

    const ttftDurable = turns.map((t) => t.firstDeltaMs ?? Number.NaN);
    if (ttftDurable.some((v) => Number.isNaN(v))) throw new Error('a streaming turn got no text_delta before done');
    const ttftDirect = directs.map((d) => d.ttftMs);
    const du = summarize(ttftDurable);
    const di = summarize(ttftDirect);
    const firstEventTypes: Record<string, number> = {};
    const firstDurableTypes: Record<string, number> = {};
    for (const t of turns) {
      firstEventTypes[t.firstEventType] = (firstEventTypes[t.firstEventType] ?? 0) + 1;
      firstDurableTypes[t.firstDurableType] = (firstDurableTypes[t.firstDurableType] ?? 0) + 1;
    }
    const median = (xs: number[]): number => summarize(xs).p50;

    // History per turn against the length of the answer, and what each turn adds to the session.
    const histSession = `streamhist-${RUN_TAG}`;
    log(`streaming: history per turn, ${opts.streamHistoryTurns} turns each of a ${STREAM_REPLIES.short.length}- and a ${STREAM_REPLIES.long.length}-character answer, alternating, in one session`);
    const rows = new Map<StreamReply, { deltas: number[]; turnEvents: number[]; turnBytes: number[]; sessionEventsAdded: number[] }>();
    let sessionBefore: number | undefined;
    let sessionFirstTurnEvents = Number.NaN;
    let sessionRuns = 0;
    for (let i = 0; i < opts.streamHistoryTurns; i++) {
      for (const reply of ['short', 'long'] as const) {
        const tag = nextTag();
        const t = await timedApiTurn(sys.apiUrl, token, histSession, streamMessage(reply, tag));
        if (t.finalText !== STREAM_REPLIES[reply]) throw new Error(`history turn ${t.turnId} answered ${JSON.stringify(t.finalText?.slice(0, 80))}`);
        await waitTurnClosed(sys.client, t.turnId);
        const tl = await turnTimeline(sys.client, t.turnId, t.t0Epoch);
        const s = await sessionHistoryEvents(sys.client, histSession);
        sessionRuns = s.runs;
        const row = rows.get(reply) ?? { deltas: [], turnEvents: [], turnBytes: [], sessionEventsAdded: [] };
        row.deltas.push(t.deltas);
        row.turnEvents.push(tl.historyEvents);
        row.turnBytes.push(tl.historyBytes);
        if (sessionBefore === undefined) sessionFirstTurnEvents = s.events;
        else row.sessionEventsAdded.push(s.events - sessionBefore);
        sessionBefore = s.events;
        rows.set(reply, row);
      }
    }
    const mean = (xs: number[]): number => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN);

    return {
      chunkDelayMs: opts.chunkDelayMs,
      turns: opts.streamTurns,
      warmup: opts.streamWarmup,
      firstEvent: summarize(turns.map((t) => t.firstEventMs)),
      firstEventTypes,
      firstDurable: summarize(turns.map((t) => t.firstDurableMs)),
      firstDurableTypes,
      post: summarize(turns.map((t) => t.postMs)),
      sseHeaders: summarize(turns.map((t) => t.sseHeadersMs)),
      ttft: {
        direct: di,
        durable: du,
        added: { p50: du.p50 - di.p50, p95: du.p95 - di.p95, p99: du.p99 - di.p99 },
        pairedAddedP50: median(ttftDurable.map((v, i) => v - (ttftDirect[i] ?? Number.NaN))),
      },
      durableDone: summarize(turns.map((t) => t.endMs)),
      directTotal: summarize(directs.map((d) => d.totalMs)),
      timeline: {
        postAnswered: median(turns.map((t) => t.postMs)),
        turnStarted: median(timelines.map((t) => t.started)),
        firstSseEvent: median(turns.map((t) => t.firstEventMs)),
        firstDurableEvent: median(turns.map((t) => t.firstDurableMs)),
        turnBegun: median(timelines.map((t) => t.begun)),
        llmScheduled: median(timelines.map((t) => t.llmScheduled)),
        llmStarted: median(timelines.map((t) => t.llmStarted)),
        llmRequestAtModel: median(turns.map((t) => t.llmRequestAtModel)),
        firstDelta: du.p50,
      },
      sseRetries: turns.reduce((a, t) => a + t.sseRetries, 0),
      turnReads: { queries: perTurn('queries'), describes: perTurn('describes'), results: perTurn('results') },
      liveTextMismatches,
      ttftSession: {
        turns: sessionTurns,
        events: session.events,
        runs: session.runs,
        turnEventsMean: mean(timelines.map((t) => t.historyEvents)),
        turnEventsMin: Math.min(...timelines.map((t) => t.historyEvents)),
        turnEventsMax: Math.max(...timelines.map((t) => t.historyEvents)),
      },
      history: {
        rows: (['short', 'long'] as const).map((reply) => {
          const r = rows.get(reply) ?? { deltas: [], turnEvents: [], turnBytes: [], sessionEventsAdded: [] };
          return {
            reply,
            chars: STREAM_REPLIES[reply].length,
            turns: r.turnEvents.length,
            deltasMean: mean(r.deltas),
            turnEvents: r.turnEvents,
            turnBytesMean: mean(r.turnBytes),
            sessionEventsAdded: r.sessionEventsAdded,
          };
        }),
        sessionFirstTurnEvents,
        sessionRuns,
      },
    };
  } finally {
    sys.model.setFaults([]);
  }
}


export function renderStreaming(s: StreamingResult): string {
  const out: string[] = [];
  const row = (label: string, x: Summary): string[] => [label, String(x.n), ms(x.p50), ms(x.p95), ms(x.p99), ms(x.mean), ms(x.max)];
  out.push(
    `4. Streaming through the HTTP API (ms from just before the POST), ${s.turns} turns in one session after ${s.warmup} warm-up, ` +
      `each paired with a direct openai-client stream of the same request, interleaved; demo model pauses ${s.chunkDelayMs} ms after each text chunk; SSE poll 25 ms`,
  );
  out.push(
    table(
      ['measure', 'n', 'p50', 'p95', 'p99', 'mean', 'max'],
      [
        row('POST answered', s.post),
        row('POST → SSE headers', s.sseHeaders),
        row('POST → first SSE event', s.firstEvent),
        row('POST → first durable SSE event (with id)', s.firstDurable),
        row('TTFT direct (request → first content chunk)', s.ttft.direct),
        row('TTFT durable (POST → first text_delta)', s.ttft.durable),
        ['added TTFT (durable − direct, per percentile)', '', ms(s.ttft.added.p50), ms(s.ttft.added.p95), ms(s.ttft.added.p99), '', ''],
        row('POST → done (durable)', s.durableDone),
        row('direct stream complete', s.directTotal),
      ],
    ),
  );
  out.push(
    `First SSE event: ${Object.entries(s.firstEventTypes).map(([k, v]) => `${k} ×${v}`).join(', ')}; ` +
      `first durable one: ${Object.entries(s.firstDurableTypes).map(([k, v]) => `${k} ×${v}`).join(', ')}. ` +
      `Median of the paired differences (durable − direct TTFT): ${ms(s.ttft.pairedAddedP50)} ms. ` +
      `SSE connections retried: ${s.sseRetries}; turns whose live text differed from the final text: ${s.liveTextMismatches}.`,
  );
  out.push(
    `Temporal reads of the turn by the API per measured turn (POST + SSE): ${s.turnReads.queries.toFixed(2)} turnState queries, ` +
      `${s.turnReads.describes.toFixed(2)} describes, ${s.turnReads.results.toFixed(2)} result reads.`,
  );
  out.push('');
  out.push('Where the time to the first token goes (median ms after the POST started; server steps from the turn workflow history)');
  const t = s.timeline;
  out.push(
    table(
      ['POST answered', 'turn started', 'first SSE event', 'first durable SSE event', 'turn begun (session signal)', 'LLM activity scheduled', 'LLM activity started', 'LLM request at model', 'first text_delta'],
      [[t.postAnswered, t.turnStarted, t.firstSseEvent, t.firstDurableEvent, t.turnBegun, t.llmScheduled, t.llmStarted, t.llmRequestAtModel, t.firstDelta].map(ms)],
    ),
  );
  out.push('');
  out.push(`History per turn against the length of the answer (${s.history.rows[0]?.turns ?? 0} turns each, alternating, in one session)`);
  out.push(
    table(
      ['answer', 'chars', 'text_delta events/turn', 'turn history events', 'turn history KB', 'session events added per turn'],
      s.history.rows.map((r) => [
        r.reply,
        String(r.chars),
        r.deltasMean.toFixed(1),
        r.turnEvents.join(', '),
        (r.turnBytesMean / 1024).toFixed(1),
        r.sessionEventsAdded.join(', '),
      ]),
    ),
  );
  const ts = s.ttftSession;
  out.push(
    `Session workflow: its first turn (start included) left ${s.history.sessionFirstTurnEvents} events. The TTFT session: ${ts.events} events ` +
      `over ${ts.turns} turns (${ts.runs} run${ts.runs === 1 ? '' : 's'}), ${(ts.events / ts.turns).toFixed(1)} per turn; its turn workflows ${ts.turnEventsMean.toFixed(1)} events each ` +
      `(${ts.turnEventsMin}–${ts.turnEventsMax}: a signal or activity result that arrives before the next workflow task starts shares it).`,
  );
  return out.join('\n');
}


export function streamingTargets(s: StreamingResult | undefined): Array<{ section: Section; target: string; measured: string; met: boolean }> {
  if (!s) return [];
  const [short, long] = s.history.rows;
  const mean = (xs: number[] | undefined): number => (xs && xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN);
  // Flat: the long answer costs less than one more workflow task (3 events) than the short one. The
  // count can move by a workflow task with timing (see the report), never with the answer's length.
  const flat = (xs: number[] | undefined, ys: number[] | undefined): boolean => mean(ys) - mean(xs) < 3;
  const values = (xs: number[] | undefined): string => [...new Set(xs ?? [])].join('/') || '?';
  return [
    {
      section: 'streaming',
      target: `POST → first SSE event p50 <= ${TARGETS.firstSseEventP50Ms} ms`,
      measured:
        `${ms(s.firstEvent.p50)} ms (p95 ${ms(s.firstEvent.p95)}, p99 ${ms(s.firstEvent.p99)}; ` +
        `${Object.keys(s.firstEventTypes).join('/')}; first durable event ${ms(s.firstDurable.p50)} ms p50)`,
      met: s.firstEvent.p50 <= TARGETS.firstSseEventP50Ms,
    },
    {
      section: 'streaming',
      target: `added time to first token p50 <= ${TARGETS.addedTtftP50Ms} ms`,
      measured: `${ms(s.ttft.added.p50)} ms (p95 ${ms(s.ttft.added.p95)}; durable ${ms(s.ttft.durable.p50)} vs direct ${ms(s.ttft.direct.p50)} p50)`,
      met: s.ttft.added.p50 <= TARGETS.addedTtftP50Ms,
    },
    {
      section: 'streaming',
      target: `history events per turn flat in answer length (${short?.chars ?? '?'} vs ${long?.chars ?? '?'} chars)`,
      measured:
        `turn ${values(short?.turnEvents)} vs ${values(long?.turnEvents)} events; ` +
        `session +${values(short?.sessionEventsAdded)} vs +${values(long?.sessionEventsAdded)} per turn`,
      met: flat(short?.turnEvents, long?.turnEvents) && flat(short?.sessionEventsAdded, long?.sessionEventsAdded),
    },
  ];
}

