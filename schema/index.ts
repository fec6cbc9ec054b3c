export { users, apiKeys, identities, type StoredPreferences, type StoredPreset } from "./users";
export { plants } from "./plants";
export { creditDays, creditHolds, usageEvents, idempotencyKeys } from "./credits";
export { groups, contexts, messages, shares } from "./contexts";
export { modelTimings } from "./models";
export { sessions, refreshTokens, walletNonces, endedSessions } from "./sessions";
export { invites, signUpCounts } from "./sign-up";
export { healthProbe } from "./operations";
export { auditEvents } from "./admin";
