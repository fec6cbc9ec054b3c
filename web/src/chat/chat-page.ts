// The chat's part of the signed-in app, one file for the browser: the conversation with its
// composer, and the top bar's title and menu for it. web/src/app-shell.tsx loads it for a
// conversation or a new chat, so Settings and the app's other pages do without it.
export { ChatScreen } from "./chat-screen";
export { ConversationHeader } from "./conversation-header";
