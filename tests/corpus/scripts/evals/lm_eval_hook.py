from lm_eval.models.openai_completions import LocalChatCompletion

LocalChatCompletion.max_retries = 10
