// The entry point of the bundle: `start` mounts the canvas in a `gr.HTML` component.
//
// builder_ui/app/canvas/__init__.py runs the built bundle as the component's `js_on_load`, then
// `KerasSeqCanvas.start({element, props, trigger, watch, catalog})`: the catalog of blocks comes
// once, here, not with every value. The styles (Svelte Flow's and the canvas's own) go in with
// the script, so nothing else is fetched.

import { mount } from "svelte";
import flowCss from "@xyflow/svelte/dist/style.css?inline";

import App from "./App.svelte";
import ownCss from "./canvas.css?inline";

export function start({ element, props, trigger, watch, catalog = [] }) {
  const root = element.querySelector(".ksg-root") || element;
  root.textContent = "";
  const style = document.createElement("style");
  style.textContent = `${flowCss}\n${ownCss}`;
  root.append(style);
  return mount(App, { target: root, props: { gradio: { props, trigger, watch }, root, catalog } });
}
