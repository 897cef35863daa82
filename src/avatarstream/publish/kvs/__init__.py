"""Amazon Kinesis Video Streams output: MKV fragments over signed, chunked PutMedia connections."""

from avatarstream.publish.kvs.settings import KvsSettings
from avatarstream.publish.kvs.sink import KvsSink

__all__ = ["KvsSettings", "KvsSink"]
