"""What a finished run gives back: comparisons, exported models, inspections, model views.

- `compare`: the results table of many runs (`compare.compare(store)`), CSV, curves.
- `export`: a run's model as `.keras`, a SavedModel zip, Python source, ONNX or LiteRT.
- `onnx_litert`: the ONNX and LiteRT conversions (the graph that goes in, the
  operators converted by hand, the refusals).
- `model_source`: the Python source of a model built from a spec.
- `inspection`: predictions, attention maps, gradient flow, positional encodings.
- `model_view`: a model's layers as the diagram and summary the app shows.

Each reads the run store (`builder_ui.engine`) and the builders; none trains.
"""
