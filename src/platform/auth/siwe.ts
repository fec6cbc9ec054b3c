// Sign-In with Ethereum (EIP-4361) messages, parsed strictly by the EIP's ABNF: every line
// in its place, LF line ends, nothing before or after. A message that is not exactly one is
// refused with the line and what was expected there, so whoever built it can fix it.

import { isChecksummedAddress } from "./wallet-signature";

export interface SiweMessage {
  /** The URI scheme before the domain, when the message names one (`https`). */
  scheme?: string;
  /** The RFC 3986 authority asking for the sign-in: host, and port when not the default. */
  domain: string;
  /** The EIP-55 checksummed address. */
  address: string;
  statement?: string;
  uri: string;
  version: "1";
  chainId: number;
  nonce: string;
  issuedAt: Date;
  expirationTime?: Date;
  notBefore?: Date;
  requestId?: string;
  resources: string[];
}

/** Why a text is not an EIP-4361 message, in words that name the line. */
export class SiweFormatError extends Error {
  override name = "SiweFormatError";
}

const HEADER_SUFFIX = " wants you to sign in with your Ethereum account:";
// RFC 3986: scheme, and an authority (userinfo@, a reg-name, IPv4 or [IP-literal], :port).
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*$/;
const AUTHORITY = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=:%]*@)?(?:\[[0-9A-Fa-f:.vV]+\]|[A-Za-z0-9\-._~!$&'()*+,;=%]+)(?::[0-9]*)?$/;
// EIP-4361: statement = *( reserved / unreserved / " " ).
const STATEMENT = /^[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;= ]*$/;
const NONCE = /^[A-Za-z0-9]{8,}$/;
const CHAIN_ID = /^[0-9]+$/;
// RFC 3339 date-time.
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/;
// RFC 3986 pchar, for the request id.
const REQUEST_ID = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-Fa-f]{2})*$/;
// Characters an RFC 3986 URI may hold (its structure is then checked by URL).
const URI_CHARS = /^[A-Za-z][A-Za-z0-9+.-]*:[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]*$/;

export function parseSiweMessage(text: string): SiweMessage {
  if (text.includes("\r")) throw new SiweFormatError("lines must end with a line feed alone (no carriage returns)");
  const lines = text.split("\n");
  let at = 0;
  const line = () => lines[at];
  const fail = (expected: string): never => {
    const found = line();
    throw new SiweFormatError(
      found === undefined ? `the message ends where it should have ${expected}` : `line ${at + 1} should be ${expected}`,
    );
  };

  const header = line() ?? "";
  if (!header.endsWith(HEADER_SUFFIX)) fail(`"<domain>${HEADER_SUFFIX}"`);
  let domain = header.slice(0, -HEADER_SUFFIX.length);
  let scheme: string | undefined;
  const schemeEnd = domain.indexOf("://");
  if (schemeEnd !== -1) {
    scheme = domain.slice(0, schemeEnd);
    domain = domain.slice(schemeEnd + 3);
    if (!SCHEME.test(scheme)) fail("a URI scheme, then :// and the domain");
  }
  if (!AUTHORITY.test(domain)) fail("the domain (an RFC 3986 authority such as example.com or localhost:8787)");
  at++;

  const address = line() ?? "";
  if (!/^0x[0-9a-fA-F]{40}$/.test(address)) fail("the Ethereum address (0x and 40 hex digits)");
  if (!isChecksummedAddress(address)) fail("the address in its EIP-55 checksummed form (mixed case)");
  at++;

  if (line() !== "") fail("empty");
  at++;
  let statement: string | undefined;
  if (line() !== "") {
    statement = line() ?? "";
    if (!STATEMENT.test(statement)) fail("the statement: ASCII letters, digits, spaces and URI punctuation only");
    at++;
  }
  if (line() !== "") fail("empty");
  at++;

  // Each field is checked on its own line, then passed.
  const field = (name: string, valid: (value: string) => boolean, expected: string): string => {
    const current = line();
    if (current === undefined || !current.startsWith(`${name}: `) || !valid(current.slice(name.length + 2))) fail(expected);
    at++;
    return current!.slice(name.length + 2);
  };
  const optionalField = (name: string, valid: (value: string) => boolean, expected: string) =>
    line()?.startsWith(`${name}: `) ? field(name, valid, expected) : undefined;
  const isUri = (value: string) => URI_CHARS.test(value) && parsesAsUrl(value);
  const isTime = (value: string) => DATE_TIME.test(value) && isRealTime(value);
  const timeExpected = (name: string) => `"${name}: " and an RFC 3339 time of a real date, such as 2026-11-22T12:00:00.000Z`;

  const uri = field("URI", isUri, '"URI: " and the URI of what is signed in to (an RFC 3986 URI such as https://example.com/)');
  field("Version", (v) => v === "1", '"Version: 1"');
  const chain = field(
    "Chain ID",
    (v) => CHAIN_ID.test(v) && Number.isSafeInteger(Number(v)) && Number(v) >= 1,
    '"Chain ID: " and a decimal EIP-155 chain id such as 1 (not hex, not eip155:1)',
  );
  const nonce = field("Nonce", (v) => NONCE.test(v), '"Nonce: " and at least 8 letters or digits');
  const issuedAt = new Date(field("Issued At", isTime, timeExpected("Issued At")));
  const expiration = optionalField("Expiration Time", isTime, timeExpected("Expiration Time"));
  const before = optionalField("Not Before", isTime, timeExpected("Not Before"));
  const requestId = optionalField("Request ID", (v) => REQUEST_ID.test(v), '"Request ID: " and URI path characters');
  const resources: string[] = [];
  if (line() === "Resources:") {
    at++;
    while (line()?.startsWith("- ")) {
      const resource = line()!.slice(2);
      if (!isUri(resource)) fail('"- " and a resource\'s URI');
      resources.push(resource);
      at++;
    }
  }
  if (at < lines.length) {
    fail("the end of the message (after Issued At only Expiration Time, Not Before, Request ID and Resources may follow, in that order)");
  }

  return {
    scheme,
    domain,
    address,
    statement,
    uri,
    version: "1",
    chainId: Number(chain),
    nonce,
    issuedAt,
    expirationTime: expiration === undefined ? undefined : new Date(expiration),
    notBefore: before === undefined ? undefined : new Date(before),
    requestId,
    resources,
  };
}

/**
 * Whether an RFC 3339 date-time (already of the right shape) names a time that exists: a
 * real day of its month (no 2026-11-31, which Date would take for 1 December), hours to 23,
 * minutes to 59, seconds to 59 (a leap second's :60 cannot be told apart from the next
 * minute by Date, so it is refused), and an offset within ±23:59.
 */
function isRealTime(value: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))$/.exec(value);
  if (!m) return false;
  const [year, month, day, hour, minute, second, offsetHours = "0", offsetMinutes = "0"] = m.slice(1).map((part) => (part === undefined ? undefined : Number(part)));
  const daysInMonth = new Date(Date.UTC(year!, month!, 0)).getUTCDate();
  return (
    month! >= 1 && month! <= 12 && day! >= 1 && day! <= daysInMonth && hour! <= 23 && minute! <= 59 && second! <= 59 &&
    Number(offsetHours) <= 23 && Number(offsetMinutes) <= 59 && !Number.isNaN(new Date(value).getTime())
  );
}

function parsesAsUrl(value: string): boolean {
  try {
    return Boolean(new URL(value));
  } catch {
    return false;
  }
}
