"""The span parser: a BiLSTM that scores every span of a sentence, and CKY over those scores (the student
of self-training)."""
