"""xetile_dsl.runtime"""
