"""What a finished run gives back: comparisons, exported models, inspections, model views.

- `compare`: the results table of many runs (`compare.compare(store)`), CSV, curves.
- `export`: a run's model as `.keras`, a SavedModel zip, Python source, ONNX or LiteRT.
- `runtime_files`: the graph an ONNX or LiteRT file holds (a forward pass, or the decode
  loop); `onnx_file` and `litert_file` convert it (the operators converted by hand, the
  refusals), each loaded by an export of its format.
- `model_source`: the Python source of a model built from a spec.
- `inspection`: predictions, attention maps, gradient flow, positional encodings.
- `model_view`: a model's layers as the diagram and summary the app shows.

Each reads the run store (`builder_ui.engine`) and the builders; none trains.
"""
