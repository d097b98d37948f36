"""The capture: one pass of a model on meta, fake or real tensors, recorded op by op."""
