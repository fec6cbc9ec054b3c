import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { audioFormat, wavSeconds } from "../src/platform/speech/transcription";
import { expectError } from "./support/expect-error";
import { startFakeUpstream, type FakeUpstream } from "./support/fake-upstream";
import { createHarness, type Harness } from "./support/harness";

/** A real PCM WAV: `seconds` of a 440 Hz tone, 16 kHz, mono, 16-bit. */
function wav(seconds: number, sampleRate = 16_000): Uint8Array<ArrayBuffer> {
  const samples = Math.round(seconds * sampleRate);
  const bytes = new Uint8Array(44 + samples * 2);
  const view = new DataView(bytes.buffer);
  const text = (at: number, s: string) => {
    for (let i = 0; i < s.length; i++) view.setUint8(at + i, s.charCodeAt(i));
  };
  text(0, "RIFF");
  view.setUint32(4, 36 + samples * 2, true);
  text(8, "WAVE");
  text(12, "fmt ");
  view.setUint32(16, 16, true);
  view.setUint16(20, 1, true); // PCM
  view.setUint16(22, 1, true); // mono
  view.setUint32(24, sampleRate, true);
  view.setUint32(28, sampleRate * 2, true); // byte rate
  view.setUint16(32, 2, true);
  view.setUint16(34, 16, true);
  text(36, "data");
  view.setUint32(40, samples * 2, true);
  for (let i = 0; i < samples; i++) view.setInt16(44 + i * 2, Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / sampleRate)), true);
  return bytes;
}

/** The first bytes of a WebM file, as MediaRecorder writes them (EBML header). */
const webm = () => new Uint8Array([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86, 0x81, 0x01, 0x42, 0xf7, 0x81, 0x01, 0x42, 0xf2, 0x81, ...new Array(2000).fill(7)]);

function form(file: Uint8Array<ArrayBuffer>, fields: Record<string, string> = {}, name = "speech.wav", type = "audio/wav") {
  const body = new FormData();
  body.set("file", new Blob([file], { type }), name);
  for (const [k, v] of Object.entries(fields)) body.set(k, v);
  return body;
}

let up: FakeUpstream;
let h: Harness;
let token: string;
beforeAll(async () => {
  up = await startFakeUpstream();
  h = await createHarness({ env: { STT_BASE_URL: up.baseUrl, STT_API_KEY: "stt-test-key", MODEL_TIMEOUT_MS: "500", DAILY_CREDITS: "5" } });
  token = await h.signIn("speaker");
});
afterAll(async () => {
  await h.close();
  await up.close();
});
beforeEach(() => {
  up.mode = "ok";
  up.transcriptionSeconds = undefined;
  up.transcriptions.length = 0;
});

const post = (body: BodyInit, headers: Record<string, string> = {}) =>
  h.request("/audio/transcriptions", { method: "POST", body, token, headers });

describe("POST /audio/transcriptions", () => {
  it("relays a WAV recording to the provider and answers its transcript", async () => {
    const audio = wav(1.5);
    const res = await post(form(audio, { language: "en" }));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ text: "water the monstera on sunday" });
    expect(up.transcriptions).toHaveLength(1);
    const sent = up.transcriptions[0]!;
    expect(sent.headers.authorization).toBe("Bearer stt-test-key");
    expect(sent.fields).toMatchObject({ model: "whisper-1", language: "en" });
    expect(sent.file.name).toBe("speech.wav");
    expect(Buffer.from(sent.file.bytes).equals(Buffer.from(audio))).toBe(true);
  });

  it("always uses the configured model, whatever model the caller names", async () => {
    await post(form(wav(0.5), { model: "gpt-4o-transcribe" }));
    expect(up.transcriptions[0]!.fields.model).toBe("whisper-1");
  });

  it("costs no credits", async () => {
    const before = (await (await h.request("/credits", { token })).json()) as { remaining: number };
    expect((await post(form(wav(0.5)))).status).toBe(200);
    const after = (await (await h.request("/credits", { token })).json()) as { remaining: number };
    expect(after.remaining).toBe(before.remaining);
  });

  it("refuses a WAV longer than 120 s before calling the provider", async () => {
    await expectError(await post(form(wav(121))), 400, /121 s long; the limit is 120 s/);
    expect(up.transcriptions).toHaveLength(0);
  });

  it("refuses a compressed recording whose measured duration is over the limit", async () => {
    up.transcriptionSeconds = 300;
    await expectError(await post(form(webm(), {}, "speech.webm", "audio/webm")), 400, /300 s long/);
    up.transcriptionSeconds = 30;
    expect((await post(form(webm(), {}, "speech.webm", "audio/webm"))).status).toBe(200);
  });

  it("refuses a file that is not audio", async () => {
    await expectError(await post(form(new TextEncoder().encode("hello, I am text, not a recording") as Uint8Array<ArrayBuffer>, {}, "a.txt", "text/plain")), 400, /not an audio recording/);
    expect(up.transcriptions).toHaveLength(0);
  });

  it("refuses a form without a file, or with a bad language", async () => {
    const noFile = new FormData();
    noFile.set("model", "whisper-1");
    await expectError(await post(noFile), 400, /file/);
    await expectError(await post(form(wav(0.5), { language: "English!" })), 400, /language/);
  });

  it("answers 415 to a body that is not multipart", async () => {
    await expectError(await post('{"file":"x"}', { "Content-Type": "application/json" }), 415, /multipart\/form-data/);
  });

  it("answers 413 over 10 MiB, over a real connection", async () => {
    const base = await h.listen();
    const big = new Uint8Array(10 * 1024 * 1024 + 1024);
    big.set(wav(0.1).subarray(0, 44));
    const res = await fetch(`${base}/audio/transcriptions`, { method: "POST", body: form(big), headers: { Authorization: `Bearer ${token}` } });
    await expectError(res, 413, /10 MiB limit/);
    expect(up.transcriptions).toHaveLength(0);
  });

  it("accepts a 2 MiB recording, past the 1 MiB JSON body limit", async () => {
    const res = await post(form(wav(70)));
    expect(res.status).toBe(200);
    expect(up.transcriptions[0]!.file.bytes.length).toBeGreaterThan(2 * 1024 * 1024);
  });

  it("answers 502 without the provider's details when it fails, and 504 when it does not answer", async () => {
    up.mode = "fail";
    const body = await expectError(await post(form(wav(0.5))), 502, /speech-to-text provider failed \(HTTP 500\)/);
    expect(JSON.stringify(body)).not.toContain(up.secretInErrors);
    up.mode = "slow";
    await expectError(await post(form(wav(0.5))), 504, /did not answer within 0.5 s/);
  });

  it("requires authentication", async () => {
    const res = await h.request("/audio/transcriptions", { method: "POST", body: form(wav(0.5)) });
    await expectError(res, 401);
  });

  it("is in the OpenAPI document as multipart", async () => {
    const doc = (await (await h.request("/openapi.json")).json()) as { paths: Record<string, { post?: { requestBody?: { content?: object } } }> };
    expect(Object.keys(doc.paths["/audio/transcriptions"]!.post!.requestBody!.content!)).toEqual(["multipart/form-data"]);
  });
});

describe("POST /audio/transcriptions without a provider", () => {
  it("answers 503 naming what to set, and /client-config says it is unavailable", async () => {
    const bare = await createHarness();
    try {
      const t = await bare.signIn("x");
      const res = await bare.request("/audio/transcriptions", { method: "POST", body: form(wav(0.5)), token: t });
      await expectError(res, 503, /STT_BASE_URL/);
      expect(await (await bare.request("/client-config")).json()).toMatchObject({ transcription: { available: false } });
      expect(await (await h.request("/client-config")).json()).toMatchObject({ transcription: { available: true, maxBytes: 10485760, maxSeconds: 120 } });
    } finally {
      await bare.close();
    }
  });
});

describe("POST /audio/transcriptions on Workers AI", () => {
  it("sends the recording as base64 to Whisper when the AI binding is bound and STT_BASE_URL is not", async () => {
    const calls: Array<{ model: string; inputs: Record<string, unknown> }> = [];
    const workersAi = {
      run: async (model: string, inputs: Record<string, unknown>) => {
        calls.push({ model, inputs });
        return { text: " repot in spring ", transcription_info: { duration: 0.5 } };
      },
    };
    const ai = await createHarness({ workersAi });
    try {
      const audio = wav(0.5);
      const res = await ai.request("/audio/transcriptions", { method: "POST", body: form(audio, { language: "en" }), token: await ai.signIn("w") });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ text: "repot in spring" });
      expect(calls).toHaveLength(1);
      expect(calls[0]!.model).toBe("@cf/openai/whisper-large-v3-turbo");
      expect(calls[0]!.inputs.language).toBe("en");
      expect(Buffer.from(calls[0]!.inputs.audio as string, "base64").equals(Buffer.from(audio))).toBe(true);
    } finally {
      await ai.close();
    }
  });
});

describe("reading recordings", () => {
  it("reads a WAV's duration from its chunks, past extra chunks", () => {
    expect(wavSeconds(wav(2.25))).toBe(2.25);
    // A LIST chunk before the data, as some recorders write.
    const plain = wav(1, 8000);
    const list = new Uint8Array([..."LIST"].map((c) => c.charCodeAt(0)).concat([3, 0, 0, 0, 1, 2, 3, 0]));
    const withList = new Uint8Array(plain.length + list.length);
    withList.set(plain.subarray(0, 36));
    withList.set(list, 36);
    withList.set(plain.subarray(36), 36 + list.length);
    expect(wavSeconds(withList)).toBe(1);
  });

  it("tells audio containers from other files by their bytes", () => {
    expect(audioFormat(wav(0.1))).toBe("wav");
    expect(audioFormat(webm())).toBe("webm");
    expect(audioFormat(new TextEncoder().encode("OggS\0\0\0\0\0\0\0\0"))).toBe("ogg");
    expect(audioFormat(new TextEncoder().encode("<html><body>"))).toBeUndefined();
  });
});
