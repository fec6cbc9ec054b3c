// ---------------------------------------------------------------------------------------
// ADMINS: who may use the operator's console (/admin/*): user ids, wallet addresses (any
// case) and e-mail addresses the identity provider marks verified, comma-separated.
// ---------------------------------------------------------------------------------------

export interface Admins {
  userIds: ReadonlySet<string>;
  /** Lower-case 0x… addresses. */
  wallets: ReadonlySet<string>;
  /** Lower-case addresses. */
  emails: ReadonlySet<string>;
}

/** What an account is known by, for matching against ADMINS. */
export interface AccountIdentifiers {
  userId: string;
  wallets: readonly string[];
  /** E-mail addresses the identity provider marked verified. */
  verifiedEmails: readonly string[];
}

/** No admin at all (ADMINS unset). */
export const NO_ADMINS: Admins = { userIds: new Set(), wallets: new Set(), emails: new Set() };

const USER_ID = /^usr_[A-Za-z0-9_-]{22}$/;
const WALLET = /^0x[0-9a-fA-F]{40}$/;
const EMAIL = /^[^\s@,]+@[^\s@,]+$/;

/** Parses ADMINS; the bad entries, if any, in `problems`. */
export function parseAdmins(text: string): { admins: Admins; problems: string[] } {
  const userIds = new Set<string>();
  const wallets = new Set<string>();
  const emails = new Set<string>();
  const problems: string[] = [];
  for (const entry of text.split(",").map((e) => e.trim()).filter(Boolean)) {
    if (USER_ID.test(entry)) userIds.add(entry);
    else if (WALLET.test(entry)) wallets.add(entry.toLowerCase());
    else if (EMAIL.test(entry)) emails.add(entry.toLowerCase());
    else problems.push(`'${entry.slice(0, 60)}' is not a user id (usr_…), a wallet address (0x and 40 hex digits) or an e-mail address`);
  }
  return { admins: { userIds, wallets, emails }, problems };
}

export function isAdmin(admins: Admins, account: AccountIdentifiers): boolean {
  return (
    admins.userIds.has(account.userId) ||
    account.wallets.some((w) => admins.wallets.has(w.toLowerCase())) ||
    account.verifiedEmails.some((e) => admins.emails.has(e.toLowerCase()))
  );
}
