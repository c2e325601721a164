"""Generation layer: model backends, the generation cache, protocols and replays."""
