import { buildWebIfNeeded } from "../../../web/scripts/build-if-needed.mjs";

/** The browser tests exercise web/dist: build it first when the client changed. */
export default function setup() {
  buildWebIfNeeded();
}
