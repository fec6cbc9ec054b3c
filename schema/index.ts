export { users, apiKeys, identities, type StoredPreferences } from "./users";
export { plants } from "./plants";
export { creditDays, creditHolds, usageEvents, idempotencyKeys } from "./credits";
export { groups, contexts, messages, shares } from "./contexts";
export { sessions, refreshTokens, walletNonces } from "./sessions";
