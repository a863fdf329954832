"""Training: language models (one process or torchrun), the span parser on teachers' votes (self-training),
and the recipe that runs both in one command. Above modelfile: it writes what lm/ and span/ define."""
