import { describe, expect, it } from "vitest";
import { call, signIn } from "./support";

// Every surface a signed-in person uses, once each, on the real Worker over D1: statements
// that only ever ran on libSQL in the Node tests would fail here first (a raw statement with
// parameters in drizzle's D1 batch, for one).

const json = (auth: Record<string, string>, method: string, body?: unknown): RequestInit => ({
  method,
  headers: { ...auth, "Content-Type": "application/json" },
  body: body === undefined ? undefined : JSON.stringify(body),
});

async function ok<T>(res: Response | Promise<Response>, status = 200): Promise<T> {
  const r = await res;
  const text = await r.text();
  expect(r.status, text).toBe(status);
  return (text ? JSON.parse(text) : undefined) as T;
}

describe("a person's surfaces on the Worker (D1)", () => {
  it("groups, contexts, a reply regenerated, a share link, search, profile, keys, /v1, credits and usage", async () => {
    const auth = await signIn("everything");
    const group = await ok<{ id: string }>(call("/groups", json(auth, "POST", { name: "Herbs" })), 201);
    expect((await ok<{ id: string; name: string }>(call(`/groups/${group.id}`, json(auth, "PATCH", { name: "Kitchen herbs" })))).name).toBe("Kitchen herbs");

    const reply = await ok<{ contextId: string; messageId: string }>(call("/chat/send", json(auth, "POST", { message: "Basil needs sun?" })));
    await ok(call(`/contexts/${reply.contextId}`, json(auth, "PATCH", { name: "Basil", groupId: group.id, pinned: true })));
    const again = await ok<{ response: string; messageId: string }>(call(`/contexts/${reply.contextId}/messages/${reply.messageId}/regenerate`, json(auth, "POST", {})));
    expect(again.messageId).not.toBe(reply.messageId);
    const context = await ok<{ name: string; groupId: string; pinned: boolean; messages: Array<{ id: string }> }>(call(`/contexts/${reply.contextId}`, { headers: auth }));
    expect(context).toMatchObject({ name: "Basil", groupId: group.id, pinned: true });
    expect(context.messages.at(-1)!.id).toBe(again.messageId);
    const listed = await ok<{ items: Array<{ id: string }> }>(call(`/contexts?groupId=${group.id}&pinned=true`, { headers: auth }));
    expect(listed.items.map((c) => c.id)).toEqual([reply.contextId]);
    expect((await ok<{ items: Array<{ contextCount: number }> }>(call("/groups", { headers: auth }))).items[0]!.contextCount).toBe(1);

    const share = await ok<{ token: string }>(call(`/contexts/${reply.contextId}/share`, json(auth, "POST", {})), 201);
    expect((await ok<{ name: string }>(call(`/shared/${share.token}`))).name).toBe("Basil");
    expect((await ok<{ items: unknown[] }>(call("/shares", { headers: auth }))).items).toHaveLength(1);
    await ok(call(`/contexts/${reply.contextId}/share`, { method: "DELETE", headers: auth }), 204);
    expect((await call(`/shared/${share.token}`)).status).toBe(404);

    expect((await ok<{ items: unknown[] }>(call("/contexts/search?q=basil", { headers: auth }))).items.length).toBeGreaterThan(0);
    expect((await ok<{ name: string }>(call("/me", json(auth, "PATCH", { name: "Eve", preferences: { theme: "dark" } })))).name).toBe("Eve");
    expect((await ok<{ name: string }>(call("/me", { headers: auth }))).name).toBe("Eve");

    const key = await ok<{ id: string; key: string }>(call("/keys", json(auth, "POST", { name: "script" })), 201);
    expect((await ok<Array<{ id: string }>>(call("/keys", { headers: auth }))).map((k) => k.id)).toEqual([key.id]);
    await ok(call(`/keys/${key.id}`, { method: "DELETE", headers: auth }), 204);

    // The OpenAI-compatible surface, charged like any message.
    const completion = await ok<{ object: string; choices: Array<{ message: { content: string } }> }>(
      call("/v1/chat/completions", json(auth, "POST", { model: "svc-70b", messages: [{ role: "user", content: "Thyme?" }] })),
    );
    expect(completion.object).toBe("chat.completion");
    expect(completion.choices[0]!.message.content).toBe("echo: Thyme?");

    expect(await ok<{ used: number }>(call("/credits", { headers: auth }))).toMatchObject({ used: 3 });
    expect((await ok<{ days: Array<{ used: number }> }>(call("/usage", { headers: auth }))).days[0]!.used).toBe(3);
    const usage = await ok<{ items: Array<{ messageId: string | null }> }>(call("/usage/messages", { headers: auth }));
    expect(usage.items.map((i) => i.messageId).slice(1)).toEqual([again.messageId, reply.messageId]);
    expect((await call(`/contexts/${reply.contextId}/export?format=markdown`, { headers: auth })).status).toBe(200);

    await ok(call(`/groups/${group.id}`, { method: "DELETE", headers: auth }), 204);
    await ok(call(`/contexts/${reply.contextId}`, { method: "DELETE", headers: auth }), 204);
    expect((await ok<{ items: unknown[] }>(call("/contexts", { headers: auth }))).items).toEqual([]);
  });
});
