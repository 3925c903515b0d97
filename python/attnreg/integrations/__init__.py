# SPDX-License-Identifier: Apache-2.0
"""Adapters that plug attnreg into other frameworks: ``transformers``
(Hugging Face transformers' AttentionInterface). Each imports its framework
only when used."""
