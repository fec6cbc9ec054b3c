import workerd from "./vitest.config";

// The one workerd test that needs an isolate no other test has used ("a new isolate refuses,
// at its first request, what another isolate ended"): the workerd project's own setup, with
// only that file, isolated. The workerd project shares one isolate among its files for speed.
export default {
  ...workerd,
  test: { ...workerd.test, name: "workerd-new-isolate", include: ["./new-isolate.test.ts"], exclude: [], isolate: true },
};
