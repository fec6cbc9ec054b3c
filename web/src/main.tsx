import { render } from "preact";
import { App, startEarly } from "./app";
import "./ui/styles.css";

// Each in a task of its own, after the one that evaluates the page's code: on a phone, one
// long task at start is what holds a page back. First what the page will ask the network for,
// then its first render (a spinner while the rest comes).
setTimeout(startEarly, 0);
setTimeout(() => render(<App />, document.getElementById("app")!), 0);
