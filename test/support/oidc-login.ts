import { createHash, randomBytes } from "node:crypto";

/**
 * Signs a person in at a real OpenID provider (test/e2e/support/oidc-provider.ts, the
 * oidc-provider package) as a browser would, over plain HTTP: Authorization Code + PKCE, its
 * own login and consent forms, then the code traded for the provider's tokens. For the tests
 * that need a provider's real tokens without a browser (what another app at the same
 * provider would hold for the same person).
 */
export async function oidcLogin(options: {
  issuer: string;
  clientId: string;
  redirectUri: string;
  login: string;
  scope?: string;
}): Promise<{ idToken: string; accessToken: string }> {
  const cookies = new Map<string, string>();
  const remember = (res: Response) => {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const at = pair!.indexOf("=");
      cookies.set(pair!.slice(0, at), pair!.slice(at + 1));
    }
  };
  const cookieHeader = () => [...cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  const go = async (url: string, init: RequestInit = {}) => {
    const res = await fetch(new URL(url, options.issuer), { ...init, redirect: "manual", headers: { ...init.headers, Cookie: cookieHeader() } });
    remember(res);
    return res;
  };

  const verifier = randomBytes(32).toString("base64url");
  const authorize = new URL("/auth", options.issuer);
  authorize.search = new URLSearchParams({
    client_id: options.clientId,
    redirect_uri: options.redirectUri,
    response_type: "code",
    scope: options.scope ?? "openid profile email",
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    code_challenge_method: "S256",
    state: randomBytes(8).toString("hex"),
  }).toString();

  let res = await go(authorize.href);
  // Login, then consent: each is a form of the provider's (dev interactions), posted back.
  for (let step = 0; step < 10; step++) {
    const location = res.headers.get("location");
    if (!location) throw new Error(`the provider answered ${res.status}: ${await res.text()}`);
    if (location.startsWith(options.redirectUri)) {
      const code = new URL(location).searchParams.get("code");
      if (!code) throw new Error(`no code in ${location}`);
      const token = await fetch(new URL("/token", options.issuer), {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: options.redirectUri, client_id: options.clientId, code_verifier: verifier }),
      });
      const body = (await token.json()) as { id_token?: string; access_token?: string; error?: string };
      if (!body.id_token || !body.access_token) throw new Error(`the token endpoint answered ${JSON.stringify(body)}`);
      return { idToken: body.id_token, accessToken: body.access_token };
    }
    if (new URL(location, options.issuer).pathname.startsWith("/interaction/")) {
      const page = await (await go(location)).text();
      const prompt = /name="prompt" value="(\w+)"/.exec(page)?.[1] ?? "consent";
      const form = new URLSearchParams(prompt === "login" ? { prompt, login: options.login, password: "any" } : { prompt });
      res = await go(location, { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: form });
    } else {
      res = await go(location);
    }
  }
  throw new Error("the provider's login did not finish");
}
